#pragma once
// A key one request holds, from the pool's acquire to its release. The lease
// gives the key back exactly once (on release() or when it is destroyed):
// the in-flight count drops, a probe of the request's model ends, and the
// pool's waiting requests are told a slot may be free. Event-loop thread only.
#include "pool/key_pool.hpp"
#include "relay/wait_room.hpp"

#include <cstddef>
#include <string>

namespace keyshim::relay {

class KeyLease {
public:
  KeyLease() = default;
  // `index` was acquired from `pool` (the Selection said whether it probes
  // `model`); `waits` hears of the release under `pool_name`. `model` and
  // `pool_name` must outlive the lease.
  KeyLease(pool::KeyPool& pool, std::size_t index, const std::string* probed_model, WaitRoom& waits,
           const std::string& pool_name);
  KeyLease(KeyLease&& other) noexcept;
  KeyLease& operator=(KeyLease&& other) noexcept;
  KeyLease(const KeyLease&) = delete;
  KeyLease& operator=(const KeyLease&) = delete;
  ~KeyLease();

  // Give the key back now; a lease that holds nothing does nothing.
  void release();
  bool held() const { return m_pool != nullptr; }
  std::size_t index() const { return m_index; }

private:
  pool::KeyPool* m_pool = nullptr; // null once released (or never held)
  std::size_t m_index = 0;
  const std::string* m_probed = nullptr;
  WaitRoom* m_waits = nullptr;
  const std::string* m_pool_name = nullptr;
};

} // namespace keyshim::relay
