#pragma once
// What a restart keeps of one key's health: a cooling and why, a disabled
// key and why, its models' coolings, the streaks the next backoff grows
// from, its usage counts, the quota its provider last reported and the
// sessions bound to it. Named by the key's fingerprint, never its
// bytes. KeyPool::save writes these and KeyPool::restore reads them back;
// the server keeps them in the state file (docs/behaviour.md §12).
#include "pool/budget.hpp"
#include "pool/key_pool.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace keyshim::pool {

struct SavedModel {
  std::string model;
  util::TimePoint until{}; // end of its cooling
  std::string reason;
  Streaks streaks;
};

// A tool session bound to the key (pool/session_map.hpp): its id's hash.
struct SavedSession {
  std::uint64_t session = 0;
  util::TimePoint last_use{};
};

struct SavedKey {
  std::string fingerprint;
  KeyState state = KeyState::available; // cooling or disabled are worth keeping
  util::TimePoint until{};              // end of cooling
  std::string reason;
  Streaks streaks;
  std::uint64_t ok_count = 0;
  std::uint64_t error_count = 0;
  int usage_day = 0; // the local day `today` counts
  UsageCounts today;
  UsageCounts total;
  std::vector<SavedModel> models;     // cooling models only
  std::optional<KeyQuota> quota;      // the limits the provider last reported
  std::vector<SavedSession> sessions; // the sessions using it, within their ttl
  BudgetUse::Saved budget;            // use against its own limits (pool/budget.hpp)
};

util::Json to_json(const SavedKey& key);
// nullopt when `json` is not a saved key: no fingerprint, or a field of the
// wrong type. Strings are cut to bounded lengths and models to
// ModelTable::k_max_models, so a damaged file cannot grow memory.
std::optional<SavedKey> saved_key_from_json(const util::Json& json);

} // namespace keyshim::pool
