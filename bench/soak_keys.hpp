// The soak's pool file over time: which key value each of its slots holds,
// the pool's max_concurrent, and when each replaced key was retired (the
// reload that dropped it confirmed by keyshim's config generation), so an
// answer served by a retired key after that can be caught.
#pragma once

#include "soak_run.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace soak {

inline constexpr int k_keys = 6;
inline constexpr int k_max_wait_s = 3; // the pool's max_wait
// keyshim's own 503 for a request that found no key must come by max_wait
// plus this (a loaded 2-core machine included).
inline constexpr auto k_wait_slack = std::chrono::milliseconds(3000);
// A healthy stream's head later than this waited for a key (the upstream
// answers within its 40 ms gap).
inline constexpr auto k_waited = std::chrono::milliseconds(100);
// An attempt keyshim started just before a reload may reach the upstream a
// moment after it: only an answer this much later counts against a key.
inline constexpr auto k_retire_grace = std::chrono::milliseconds(250);

class KeyBook {
public:
  explicit KeyBook(const RunOptions& opt) : m_opt(opt) {}

  // Writes the pool file (mode 0600, atomically by rename) as it is now.
  bool write() const;
  // Replaces the key in `slot` by a new value; the old one is retired by
  // the next confirm_reload().
  void replace(int slot);
  void replace_all();
  void set_max_concurrent(int n) { m_max_concurrent = n; }
  int max_concurrent() const { return m_max_concurrent; }

  // SIGHUP, then waits (at most 5 s) until keyshim's config generation
  // moved; the keys replaced since the last reload are retired from then.
  // False when the reload was not seen.
  bool reload_and_confirm();
  // Whether key "GEN-INDEX" was retired before `served_at_ns` (steady clock)
  // by more than the grace.
  bool retired_before(const std::string& key_id, std::int64_t served_at_ns);

private:
  const RunOptions& m_opt;
  std::array<int, k_keys> m_generation{};
  int m_next_generation = 1;
  int m_max_concurrent = 8;
  std::unordered_map<std::string, std::int64_t> m_pending; // replaced, not yet retired
  std::mutex m_mutex;
  std::unordered_map<std::string, std::int64_t> m_retired; // key id -> steady ns
};

// keyshim's keyshim_config_generation from GET /metrics; -1 when unreadable.
long long config_generation(int port);

} // namespace soak
