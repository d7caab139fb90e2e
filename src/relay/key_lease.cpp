#include "relay/key_lease.hpp"

#include <utility>

namespace keyshim::relay {

KeyLease::KeyLease(pool::KeyPool& pool, std::size_t index, const std::string* probed_model, WaitRoom& waits,
                   const std::string& pool_name)
    : m_pool(&pool), m_index(index), m_probed(probed_model), m_waits(&waits), m_pool_name(&pool_name) {
}

KeyLease::KeyLease(KeyLease&& other) noexcept
    : m_pool(std::exchange(other.m_pool, nullptr)), m_index(other.m_index), m_probed(other.m_probed),
      m_waits(other.m_waits), m_pool_name(other.m_pool_name) {
}

KeyLease& KeyLease::operator=(KeyLease&& other) noexcept {
  if (this != &other) {
    release();
    m_pool = std::exchange(other.m_pool, nullptr);
    m_index = other.m_index;
    m_probed = other.m_probed;
    m_waits = other.m_waits;
    m_pool_name = other.m_pool_name;
  }
  return *this;
}

KeyLease::~KeyLease() {
  release();
}

// The slot goes back before the waiters hear of it, so the first of them
// finds it free; a waiter that takes it starts a lease of its own.
void KeyLease::release() {
  pool::KeyPool* pool = std::exchange(m_pool, nullptr);
  if (!pool) {
    return;
  }
  pool->release(m_index, m_probed);
  m_waits->wake(*m_pool_name);
}

} // namespace keyshim::relay
