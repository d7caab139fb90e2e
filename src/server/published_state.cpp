#include "server/published_state.hpp"

namespace keyshim::server {

PublishedState::PublishedState() : m_state(std::make_shared<relay::PoolState>()) {
}

std::shared_ptr<const relay::PoolState> PublishedState::current() const {
  std::lock_guard lock(m_mutex);
  return m_state;
}

void PublishedState::publish(std::shared_ptr<const relay::PoolState> state) {
  if (state->config) {
    ++m_generation;
  }
  std::lock_guard lock(m_mutex);
  m_state = std::move(state);
}

} // namespace keyshim::server
