#include "pool/health_cell.hpp"

#include "util/saturating.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

namespace keyshim::pool {
namespace {

// The end of a model's cooling on a key, or nullopt when it is not cooling.
std::optional<util::TimePoint> model_cooling_end(const ModelHealth* entry, util::TimePoint now) {
  if (entry != nullptr && entry->cooling(now)) {
    return entry->until;
  }
  return std::nullopt;
}

// Cooldowns only grow: a new one ending at `until` replaces a running one
// only when it ends later, so a short 503 backoff never cuts a long
// Retry-After short.
// It must end more than `slack` later to count as longer.
bool lengthens(std::optional<util::TimePoint> running_end, util::TimePoint until,
               milliseconds slack = milliseconds(0)) {
  return !running_end || *running_end + slack < until;
}

// A 429 and the quota its head reports often name the same reset: the
// cooling is computed from it a moment after the set-aside was, so the
// set-aside ends microseconds later. Reset times have a second's resolution;
// a set-aside replaces a running cooling (and its reason) only when it ends
// more than that later.
constexpr milliseconds k_set_aside_slack{1000};

} // namespace

void HealthCell::expire(util::TimePoint now) {
  if (health.state == KeyState::cooling && health.until <= now) {
    health.state = KeyState::available;
    health.until = {};
    health.reason.clear();
  }
}

std::optional<util::TimePoint> HealthCell::key_cooling_end(util::TimePoint now) {
  expire(now);
  if (health.state == KeyState::cooling) {
    return health.until;
  }
  return std::nullopt;
}

std::optional<util::TimePoint> HealthCell::cooling_end(util::TimePoint now, const std::string* model) {
  if (std::optional<util::TimePoint> end = key_cooling_end(now)) {
    return end;
  }
  if (health.state != KeyState::available || model == nullptr) {
    return std::nullopt;
  }
  return model_cooling_end(models.find(*model), now);
}

void HealthCell::cool(util::TimePoint now, ModelHealth* entry, milliseconds cooldown,
                      const std::string& reason, milliseconds slack) {
  const util::TimePoint until = now + cooldown;
  if (entry != nullptr) {
    if (lengthens(model_cooling_end(entry, now), until, slack)) {
      entry->cooled = true;
      entry->until = until;
      entry->reason = reason;
    }
    return;
  }
  std::optional<util::TimePoint> running = key_cooling_end(now);
  if (health.state != KeyState::disabled && lengthens(running, until, slack)) {
    health.state = KeyState::cooling;
    health.until = until;
    health.reason = reason;
  }
}

bool HealthCell::over_limits(util::TimePoint now, const config::Limits& limits) {
  expire(now);
  return health.state == KeyState::available && budget.blocked_until(now, limits).has_value();
}

std::optional<util::TimePoint> HealthCell::available_again(util::TimePoint now, const std::string* model,
                                                           const config::Limits& limits) {
  std::optional<util::TimePoint> end = cooling_end(now, model);
  if (health.state == KeyState::disabled) {
    return std::nullopt;
  }
  std::optional<util::TimePoint> limited = budget.blocked_until(now, limits);
  return limited && (!end || *end < *limited) ? limited : end;
}

Admission HealthCell::admit(util::TimePoint now, int max_concurrent, const std::string* model) {
  expire(now);
  if (health.state != KeyState::available) {
    return Admission::ineligible;
  }
  if (credential && !credential->valid(now)) {
    return Admission::busy; // its command runs (or is about to) for a token
  }
  if (max_concurrent > 0 && health.in_flight >= max_concurrent) {
    return Admission::busy;
  }
  bool probe = false;
  if (model != nullptr) {
    const ModelHealth* entry = models.find(*model);
    if (entry != nullptr && entry->probing && !entry->cooling(now)) {
      return Admission::busy; // the probe ends soon, one way or the other
    }
    ModelAccess access = models.access(*model, now);
    if (access == ModelAccess::closed) {
      return Admission::ineligible;
    }
    probe = access == ModelAccess::probe;
  }
  ++health.in_flight;
  health.last_used = now;
  return probe ? Admission::probe : Admission::taken;
}

Streaks HealthCell::apply(util::TimePoint now, const std::string* model, const Report& report) {
  count_attempt(now, report.failure, report.replay);
  health.last_status = report.status;
  // A model's trouble changes the pair (key, model); the key serves other models.
  const std::string* scoped = report.scope == Scope::model ? model : nullptr;
  switch (report.change) {
  case Change::success:
    succeed(model);
    break;
  case Change::failure:
  case Change::cool:
    fail(now, scoped, report);
    break;
  case Change::disable:
    disable(report.reason);
    break;
  case Change::none:
    break;
  }
  if (report.quota) {
    note_quota(now, model, *report.quota);
  }
  if (report.change != Change::success && report.change != Change::none) {
    health.last_error = LastError{report.status, report.reason, now};
  }
  return streaks(scoped);
}

Streaks HealthCell::streaks(const std::string* model) const {
  if (model == nullptr) {
    return {health.consecutive_failures, health.consecutive_rate_limits};
  }
  const ModelHealth* entry = models.find(*model);
  return entry ? Streaks{entry->consecutive_failures, entry->consecutive_rate_limits} : Streaks{};
}

void HealthCell::succeed(const std::string* model) {
  util::add_saturating(health.ok_count, 1);
  health.consecutive_failures = 0;
  health.consecutive_rate_limits = 0;
  if (model != nullptr) {
    models.erase(*model);
  }
}

// A failure counts toward the failure streak and cools only when the policy
// says the streak is long enough (a cooldown); a cooling always cools, and
// extends the rate-limit streak when it is a 429 without a usable hint.
void HealthCell::fail(util::TimePoint now, const std::string* scoped, const Report& report) {
  util::add_saturating(health.error_count, 1);
  ModelHealth* entry = scoped != nullptr ? &models.get(*scoped, now) : nullptr;
  int& failures = entry ? entry->consecutive_failures : health.consecutive_failures;
  int& rate_limits = entry ? entry->consecutive_rate_limits : health.consecutive_rate_limits;
  if (report.change == Change::failure) {
    ++failures;
  } else if (report.rate_limited) {
    ++rate_limits;
  }
  if (entry != nullptr) {
    entry->probing = false; // a probe that failed has its verdict
  }
  if (report.change == Change::cool || report.cooldown > milliseconds(0)) {
    cool(now, entry, report.cooldown, report.reason);
  }
}

// The limits a response reported are kept whatever its status. A spent one
// sets the key aside until it resets, as a cooling that counts no failure
// and grows no streak, so that acquire, the waiting room and the 503's
// Retry-After see its end like any cooldown's. It is the model's when the
// request names one, as a 429's would be (providers count limits per
// model); applied after the change, so a success clearing the model's
// trouble does not clear it.
void HealthCell::note_quota(util::TimePoint now, const std::string* model, const QuotaReport& quota) {
  health.quota = quota.quota;
  quota_seen.store(true, std::memory_order_relaxed);
  if (quota.set_aside > milliseconds(0)) {
    cool(now, model != nullptr ? &models.get(*model, now) : nullptr, quota.set_aside, quota.reason,
         k_set_aside_slack);
  }
}

void HealthCell::disable(const std::string& reason) {
  util::add_saturating(health.error_count, 1);
  health.state = KeyState::disabled;
  health.until = {};
  health.reason = reason;
}

std::array<UsageCounts*, 2> HealthCell::usage_for(util::TimePoint now, bool replay) {
  if (replay) {
    return {&health.replays, nullptr};
  }
  return {&today(now), &health.total};
}

void HealthCell::count_attempt(util::TimePoint now, std::optional<FailureClass> failure, bool replay) {
  for (UsageCounts* counts : usage_for(now, replay)) {
    if (counts == nullptr) {
      continue;
    }
    util::add_saturating(counts->requests, 1);
    if (failure) {
      util::add_saturating(counts->failures.at(static_cast<std::size_t>(*failure)), 1);
    }
  }
}

SavedKey HealthCell::save(util::TimePoint now) {
  expire(now);
  SavedKey saved;
  saved.state = health.state;
  saved.until = health.until;
  saved.reason = health.reason;
  saved.streaks = streaks(nullptr);
  saved.ok_count = health.ok_count;
  saved.error_count = health.error_count;
  saved.today = today(now);
  saved.usage_day = health.usage_day;
  saved.total = health.total;
  saved.quota = health.quota;
  saved.budget = budget.save();
  for (const ModelHealth& entry : models.entries()) {
    if (entry.cooling(now)) {
      saved.models.push_back({entry.model, entry.until, entry.reason,
                              Streaks{entry.consecutive_failures, entry.consecutive_rate_limits}});
    }
  }
  return saved;
}

void HealthCell::restore(const SavedKey& saved, util::TimePoint now, milliseconds cap) {
  health.ok_count = saved.ok_count;
  health.error_count = saved.error_count;
  health.total = saved.total;
  health.usage_day = saved.usage_day;
  health.today = saved.today; // today() starts from zero when that day is over
  health.consecutive_failures = saved.streaks.failures;
  health.consecutive_rate_limits = saved.streaks.rate_limits;
  health.quota = saved.quota;
  budget.restore(saved.budget);
  if (health.quota) {
    quota_seen.store(true, std::memory_order_relaxed);
  }
  const util::TimePoint latest = now + cap;
  if (saved.state == KeyState::disabled) {
    health.state = KeyState::disabled;
    health.reason = saved.reason;
  } else if (saved.state == KeyState::cooling && saved.until > now) {
    health.state = KeyState::cooling;
    health.until = std::min(saved.until, latest);
    health.reason = saved.reason;
  }
  for (const SavedModel& model : saved.models) {
    if (model.until > now) {
      ModelHealth& entry = models.get(model.model, now);
      entry.cooled = true;
      entry.until = std::min(model.until, latest);
      entry.reason = model.reason;
      entry.consecutive_failures = model.streaks.failures;
      entry.consecutive_rate_limits = model.streaks.rate_limits;
    }
  }
}

UsageCounts& HealthCell::today(util::TimePoint now) {
  // localtime_r costs about a microsecond and runs several times per
  // request: only once per local day here, when `now` leaves the day of the
  // last call (a clock set back counts as leaving it too).
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  if (seconds >= m_day_begins && seconds < m_day_ends && health.usage_day == m_day) {
    return health.today;
  }
  std::tm local{};
  localtime_r(&seconds, &local);
  int day = (local.tm_year + 1900) * 1000 + local.tm_yday;
  if (health.usage_day != day) {
    health.usage_day = day;
    health.today = {};
  }
  m_day = day;
  local.tm_hour = 0;
  local.tm_min = 0;
  local.tm_sec = 0;
  local.tm_isdst = -1;
  m_day_begins = std::mktime(&local);
  local.tm_mday += 1;
  local.tm_hour = 0;
  local.tm_isdst = -1;
  m_day_ends = std::mktime(&local); // -1 on failure: the range is empty, every call asks again
  return health.today;
}

std::uint64_t HealthCell::next_id() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

} // namespace keyshim::pool
