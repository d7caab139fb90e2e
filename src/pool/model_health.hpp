#pragma once
// One key's health per model, for the failures that are a model's and not
// the key's (policy::Scope::model): a model cooling on key A leaves A serving
// every other model. Entries exist only for models that failed and are
// dropped on their next success; a table holds at most k_max_models, so a
// flood of made-up model names cannot grow memory. Not thread-safe: the
// key's cell lock guards it.
#include "util/clock.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace keyshim::pool {

using std::chrono::milliseconds;

struct ModelHealth {
  std::string model;
  bool cooled = false;     // cooled since its last success
  util::TimePoint until{}; // end of the cooling; once past, one request probes
  std::string reason;      // why it cooled: "429 Retry-After", "3 consecutive failures"
  int consecutive_failures = 0;
  int consecutive_rate_limits = 0;
  bool probing = false;      // the one request that tries the model after its cooldown is in flight
  util::TimePoint touched{}; // last change, for eviction

  bool cooling(util::TimePoint now) const { return cooled && until > now; }
};

// What a request for a model may do with the key, as far as the model goes.
enum class ModelAccess {
  open,   // no trouble known
  probe,  // the cooldown has ended: this request is the probe
  closed, // cooling, or another request is probing
};

class ModelTable {
public:
  static constexpr std::size_t k_max_models = 32;

  // The entry for `model`, or nullptr.
  const ModelHealth* find(const std::string& model) const;
  // The entry for `model`, created when missing (evicting one at the cap).
  ModelHealth& get(const std::string& model, util::TimePoint now);
  // Drop `model`: it answered.
  void erase(const std::string& model);

  // For a request that is choosing this key. `probe` marks the entry probing.
  ModelAccess access(const std::string& model, util::TimePoint now);
  // The probe of `model` is over without a verdict (the client left).
  void end_probe(const std::string& model);

  const std::vector<ModelHealth>& entries() const { return m_entries; }

private:
  void evict_one(util::TimePoint now);

  std::vector<ModelHealth> m_entries;
};

} // namespace keyshim::pool
