#pragma once
// Which key each tool session of one pool used last, so that its next
// requests go to the same key: a provider's prompt cache belongs to one
// organisation or key, and a session that moves pays for its whole context
// again. A session is known by a 64-bit identity (a hash of the id its tool
// sends: no id bytes are kept) and maps to a key's identity
// (KeyPool::key_id), which a reload keeps for the keys it keeps.
//
// Bounded: at most `capacity` sessions, the least recently used going first,
// and a session unused for `ttl` is forgotten. A ttl of zero turns affinity
// off (nothing is found, nothing is kept). Thread-safe: the pools of two
// generations (a reload) share one map.
#include "util/clock.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace keyshim::pool {

class SessionMap {
public:
  // The most sessions a pool remembers.
  static constexpr std::size_t k_default_capacity = 10'000;

  explicit SessionMap(std::chrono::milliseconds ttl, std::size_t capacity = k_default_capacity);

  // A reload may change the ttl; zero forgets every session.
  void set_ttl(std::chrono::milliseconds ttl);
  bool enabled() const;

  // The key `session` used last, if it was used within the ttl; marks it
  // used now. An expired session is forgotten.
  std::optional<std::uint64_t> find(std::uint64_t session, util::TimePoint now);
  // `session` uses `key` from now on (a new session, or one that moved).
  void bind(std::uint64_t session, std::uint64_t key, util::TimePoint now);

  // Sessions remembered now, expired ones included until they are dropped.
  std::size_t size() const;

  // A session as a restart keeps it (pool/saved_health.hpp).
  struct Saved {
    std::uint64_t session = 0;
    std::uint64_t key = 0;
    util::TimePoint last_use{};
  };
  // The sessions used within the ttl, most recently used first.
  std::vector<Saved> live(util::TimePoint now) const;
  // Remember `sessions` as last used when they say, leaving out those whose
  // ttl has passed by `now`; at most the capacity, the most recent kept.
  void restore(std::vector<Saved> sessions, util::TimePoint now);
  // How many sessions used within the ttl are bound to each of `keys`.
  std::vector<std::size_t> count(const std::vector<std::uint64_t>& keys, util::TimePoint now) const;

private:
  struct Entry {
    std::uint64_t session = 0;
    std::uint64_t key = 0;
    util::TimePoint last_use{};
  };
  using Order = std::list<Entry>; // most recently used first

  bool expired(const Entry& entry, util::TimePoint now) const { return entry.last_use + m_ttl <= now; }
  void drop_stale(util::TimePoint now);

  mutable std::mutex m_mutex;
  std::chrono::milliseconds m_ttl;
  std::size_t m_capacity;
  Order m_order;
  std::unordered_map<std::uint64_t, Order::iterator> m_index;
};

} // namespace keyshim::pool
