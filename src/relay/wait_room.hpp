#pragma once
// Requests waiting for a key (a pool's `max_wait`): when no key is eligible
// but one may become eligible soon (a cooldown ends, an in-flight slot frees),
// the request waits here, nothing sent, instead of getting its 503 at once.
//
// The rule, first come first served per pool: every waiter gets a number when
// it first enters, and its pool's queue is split into lanes, one per model
// the waiters ask for ("" for requests naming none), because a key can be
// free for one model and cooling for another. A wake offers the pool's keys
// to the oldest waiter at the head of any lane; one that gets a key (or its
// answer) leaves, and the next oldest head is asked; a head that finds no key
// stays where it is, and its lane is done for this wake: those behind it want
// the same model, so they would find none either (a request's own exclusions,
// keys that already failed it, can differ: such a head holds its lane only
// until a key it may use frees or its max_wait ends). The wake ends when
// every lane's head found no key. So a release asks at most (waiters served + lanes)
// waiters, and a waiter for model A never holds up one for model B whose key
// is free. Event-loop thread only.
#include "util/clock.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace keyshim::relay {

class Waiter {
public:
  virtual ~Waiter() = default;
  // A key of its pool may be eligible: try again. True when it is done
  // waiting (it got a key, or its answer), false to stay in its place.
  virtual bool retry() = 0;
  // keyshim is shutting down: end the wait (with a 503).
  virtual void shutting_down() = 0;
};

class WaitRoom {
public:
  using MonoTime = std::chrono::steady_clock::time_point;

  // Where a waiter stands: its pool, its lane (the model it asks for), its
  // number in arrival order (0 until it first enters) and when it first
  // entered.
  struct Place {
    std::string pool;
    std::string lane;
    std::uint64_t number = 0;
    MonoTime since{};
  };

  // A pool's queue as /status reports it.
  struct Queue {
    std::size_t waiting = 0;
    std::chrono::milliseconds oldest{0}; // how long the first to enter has waited
  };

  // `clock` stamps a waiter's first entry (the relay's monotonic clock).
  explicit WaitRoom(const util::MonoClock& clock = util::steady_clock()) : m_clock(clock) {}

  // `waiter` waits at `place`. The first entry gives the place its number,
  // behind everyone already waiting, and its time; entering again (a request that waits
  // once more after an attempt) keeps that number, so its age counts.
  void enter(Place& place, const std::shared_ptr<Waiter>& waiter);
  // The waiter at `place` stops waiting (it hung up, timed out or got a
  // key). Leaving a place that is not in the room does nothing.
  void leave(const Place& place);
  // A key of `pool` was released, ended its cooldown, or a request arrived:
  // offer the keys to its waiters, oldest first (the rule above). Safe to
  // call from inside a retry(): it then runs once the current wake ends.
  void wake(const std::string& pool);
  // The pool file was reloaded: every pool's waiters try again (in the new
  // file's pools, where limits and keys may have changed).
  void wake_all();
  // Shutdown: every waiter is told, and the room empties for good.
  void close_all();
  // True once close_all() ran: a request must not start to wait then, as
  // nobody would end its wait before max_wait.
  bool closed() const { return m_closed; }

  std::size_t waiting(const std::string& pool) const;
  // How many wait in `pool` and for how long the oldest has: a look at the
  // head of each lane, never a walk of the queue.
  Queue queue(const std::string& pool) const;
  bool empty() const { return m_pools.empty(); }

private:
  struct Entry {
    std::weak_ptr<Waiter> waiter;
    MonoTime since;
  };
  using Lane = std::map<std::uint64_t, Entry>; // by number: the oldest first
  using Lanes = std::map<std::string, Lane>;

  void serve(const std::string& pool);
  void prune(const std::string& pool);

  const util::MonoClock& m_clock;
  std::map<std::string, Lanes> m_pools;
  std::uint64_t m_next_number = 1;
  bool m_waking = false;              // a wake is running: a nested one is queued
  std::vector<std::string> m_pending; // pools woken from inside a wake
  bool m_closed = false;
};

} // namespace keyshim::relay
