#pragma once
// One key's health: its state, its models' trouble and its usage, and the
// cooldown arithmetic for both the key and a (key, model) pair. Private to
// the pool. A cell outlives its pool when a reload keeps the key: the new
// pool shares it, so health and in-flight counts carry over, and requests
// still holding the old pool release and report into the same cell. Not
// thread-safe by itself: callers hold `mutex` for every call.
#include "pool/budget.hpp"
#include "pool/credential.hpp"
#include "pool/key_pool.hpp"
#include "pool/model_health.hpp"
#include "pool/saved_health.hpp"
#include "util/clock.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>

namespace keyshim::pool {

// Whether a request may take the key now.
enum class Admission {
  ineligible, // cooling or disabled, for every model or for this one
  busy,       // at max_concurrent, its model's probe is in flight, or its key_cmd runs for a
              // new token: free again soon
  taken,      // counted in flight
  probe,      // counted in flight, and this request probes its model after a cooldown
};

class HealthCell {
public:
  // The key's identity in this process, kept while a reload keeps the cell:
  // what its sessions are bound to (KeyPool::key_id). Never 0.
  const std::uint64_t id = next_id();
  mutable std::mutex mutex;
  KeyHealth health;
  ModelTable models;
  BudgetUse budget;                     // use against the key's own limits (config::Limits)
  std::optional<Credential> credential; // a key_cmd key's token (pool/credential.hpp)
  // Set once health.quota is: read without the mutex, so that choosing
  // among keys whose provider never reports limits takes no lock for them.
  std::atomic<bool> quota_seen{false};

  // A cooldown that has ended reads, and from now on is, available.
  void expire(util::TimePoint now);
  // When a request for `model` (nullptr: any model) can next use this key
  // because a cooldown ends: the key's own, or else the model's on it.
  // nullopt when no cooldown stands in the way (or the key is disabled).
  std::optional<util::TimePoint> cooling_end(util::TimePoint now, const std::string* model);
  // Cooling the key (`entry` nullptr) or the model `entry` on it until
  // now + cooldown, never shortening a longer cooling and never waking a
  // disabled key; a running cooling is replaced only by one ending more than
  // `slack` later.
  void cool(util::TimePoint now, ModelHealth* entry, milliseconds cooldown, const std::string& reason,
            milliseconds slack = milliseconds(0));

  // Whether the key, available otherwise, has reached one of its own limits.
  bool over_limits(util::TimePoint now, const config::Limits& limits);
  // When a request for `model` can next use this key: the latest of its
  // cooling_end and the end of the window of an own limit it reached.
  // nullopt when nothing stands in the way, or the key is disabled.
  std::optional<util::TimePoint> available_again(util::TimePoint now, const std::string* model,
                                                 const config::Limits& limits);

  // Takes the key for a request for `model` (nullptr: any) when it is
  // eligible: counts it in flight and stamps its last use.
  Admission admit(util::TimePoint now, int max_concurrent, const std::string* model);
  // Counts the attempt and applies its change; see KeyPool::report.
  Streaks apply(util::TimePoint now, const std::string* model, const Report& report);
  // The key's streaks, or the model's on it with `model`.
  Streaks streaks(const std::string* model) const;

  // `today` as of `now`: a new local day starts from zero.
  UsageCounts& today(util::TimePoint now);
  // Where an attempt's usage goes: `today` and `total`, or for a replay
  // `replays` alone (the second entry is then null).
  std::array<UsageCounts*, 2> usage_for(util::TimePoint now, bool replay);

  // What a restart keeps (pool/saved_health.hpp), and taking it back: a
  // cooling that has ended by `now` is left out, one longer than `cap` is
  // cut to it. For a cell no request has used yet (restore at start).
  SavedKey save(util::TimePoint now);
  void restore(const SavedKey& saved, util::TimePoint now, milliseconds cap);

private:
  static std::uint64_t next_id();
  std::optional<util::TimePoint> key_cooling_end(util::TimePoint now);
  void succeed(const std::string* model);
  void fail(util::TimePoint now, const std::string* scoped, const Report& report);
  void disable(const std::string& reason);
  void count_attempt(util::TimePoint now, std::optional<FailureClass> failure, bool replay);
  void note_quota(util::TimePoint now, const std::string* model, const QuotaReport& quota);

  // The local day health.usage_day was last set for, [begins, ends) in
  // seconds since the epoch: today() asks localtime_r only outside it.
  int m_day = 0;
  std::time_t m_day_begins = 0;
  std::time_t m_day_ends = 0;
};

} // namespace keyshim::pool
