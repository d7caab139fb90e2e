#pragma once
// The pool state requests are served from, as the server publishes it: one
// immutable PoolState at a time, replaced whole by a reload. Thread-safe: the
// reloader publishes while the event loop takes snapshots.
#include "relay/pool_state.hpp"

#include <atomic>
#include <memory>
#include <mutex>

namespace keyshim::server {

class PublishedState : public relay::StateSource {
public:
  // Starts with an empty state (no pool file read yet).
  PublishedState();

  // The state a request starting now is served from.
  std::shared_ptr<const relay::PoolState> current() const override;
  // Make `state` current; a state with a pool file counts one generation.
  void publish(std::shared_ptr<const relay::PoolState> state);
  // Successful loads of the pool file so far, for /status.
  int generation() const { return m_generation.load(); }

private:
  mutable std::mutex m_mutex;
  std::shared_ptr<const relay::PoolState> m_state;
  std::atomic<int> m_generation{0};
};

} // namespace keyshim::server
