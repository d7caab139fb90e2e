#pragma once
// Requests waiting for a key (a pool's `max_wait`): when no key is eligible
// but one may become eligible soon (a cooldown ends, an in-flight slot frees),
// the request waits here, nothing sent, instead of getting its 503 at once.
// Waiters are served first come, first served: every wake offers the keys to
// the waiters of that pool in the order they arrived. Event-loop thread only.
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>

namespace keyshim::relay {

class Waiter {
public:
  virtual ~Waiter() = default;
  // A key of its pool may be eligible: try again. True when it is done
  // waiting (it got a key, or gave up), false to stay in its place.
  virtual bool retry() = 0;
  // keyshim is shutting down: end the wait (with a 503).
  virtual void shutting_down() = 0;
};

class WaitRoom {
public:
  // `waiter` waits for a key of `pool`, behind everyone already waiting.
  // Entering twice keeps the first place.
  void enter(const std::string& pool, const std::shared_ptr<Waiter>& waiter);
  // `waiter` stops waiting (it hung up, timed out or got a key).
  void leave(const std::string& pool, const Waiter* waiter);
  // A key of `pool` was released or ended its cooldown: offer it to the
  // waiters in arrival order. Safe to call from inside a retry().
  void wake(const std::string& pool);
  // Shutdown: every waiter is told, and the room empties for good.
  void close_all();
  // True once close_all() ran: a request must not start to wait then, as
  // nobody would end its wait before max_wait.
  bool closed() const { return m_closed; }

  std::size_t waiting(const std::string& pool) const;
  bool empty() const { return m_queues.empty(); }

private:
  void wake_once(const std::string& pool);

  std::map<std::string, std::deque<std::weak_ptr<Waiter>>> m_queues;
  bool m_waking = false; // a wake is running: a nested one only asks for another pass
  bool m_again = false;
  bool m_closed = false;
};

} // namespace keyshim::relay
