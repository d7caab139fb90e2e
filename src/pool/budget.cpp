#include "pool/budget.hpp"

#include "util/saturating.hpp"

#include <algorithm>
#include <ctime>

namespace keyshim::pool {
namespace {

using std::chrono::floor;
using std::chrono::minutes;
using std::chrono::seconds;
using Seconds = long long;

constexpr Seconds k_day = 86'400;

Seconds epoch_seconds(util::TimePoint t) {
  return floor<seconds>(t).time_since_epoch().count();
}

util::TimePoint at(Seconds s) {
  return util::TimePoint(seconds(s));
}

// The zone's offset from UTC at the instant `utc`, in seconds.
Seconds offset_at(const config::DayZone& zone, Seconds utc) {
  if (!zone.local) {
    return Seconds{zone.utc_offset_minutes} * 60;
  }
  // The zone was read before any thread started (main, ShimServer): the
  // lookup itself is thread-safe.
  auto t = static_cast<std::time_t>(utc);
  std::tm local{};
  if (localtime_r(&t, &local) == nullptr) {
    return 0;
  }
  return local.tm_gmtoff;
}

Seconds floor_div(Seconds a, Seconds b) {
  Seconds q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// The instant a wall time in the zone (seconds as if the zone were UTC)
// names. No hint of where it is needed: the zone's offset there is the one a
// day before or the one a day after (offsets change at most once in a few
// days), and the instant is the earlier that reads as `wall` with its
// offset (a wall time a daylight-saving change repeats), or, when neither
// does (one the change skips), the later candidate: just after the change.
// The same wall time always names the same instant, so one day ends exactly
// where the next begins.
Seconds instant_of(const config::DayZone& zone, Seconds wall) {
  const Seconds larger = std::max(offset_at(zone, wall - k_day), offset_at(zone, wall + k_day));
  const Seconds smaller = std::min(offset_at(zone, wall - k_day), offset_at(zone, wall + k_day));
  if (offset_at(zone, wall - larger) == larger) {
    return wall - larger;
  }
  return wall - smaller;
}

} // namespace

Window minute_window(util::TimePoint now) {
  util::TimePoint begins = floor<minutes>(now);
  return {begins, begins + minutes(1)};
}

Window day_window(util::TimePoint now, int day_start, const config::DayZone& zone) {
  const Seconds t = epoch_seconds(now);
  const Seconds start = Seconds{day_start} * 60;
  auto day_begins = [&](Seconds day) { return instant_of(zone, day * k_day + start); };
  // Wall seconds moved back by day_start, so each counted day begins at a
  // multiple of 86400. In an hour a change repeats, the wall time alone may
  // name the day before (or after) the one that holds now: a step fixes it.
  Seconds day = floor_div(t + offset_at(zone, t) - start, k_day);
  for (int step = 0; step < 2 && day_begins(day + 1) <= t; ++step) {
    ++day;
  }
  for (int step = 0; step < 2 && day_begins(day) > t; ++step) {
    --day;
  }
  Seconds begins = day_begins(day);
  Seconds ends = day_begins(day + 1);
  if (begins > t || ends <= t) { // no zone keyshim reads does this: a day from now, not a loop
    begins = t;
    ends = t + k_day;
  }
  return {at(begins), at(ends)};
}

void BudgetUse::roll(util::TimePoint now, const config::Limits& limits) {
  if (!m_minute.holds(now)) {
    m_minute = minute_window(now);
    m_minute_requests = 0;
    m_minute_tokens = 0;
  }
  const bool moved = limits.day_start != m_day_start || limits.day_zone != m_day_zone;
  if (m_day.holds(now) && !moved) {
    return;
  }
  // A reload that moves the day's start keeps the use counted so far while
  // now is inside the new day; a day that ended starts from zero.
  const bool keep = moved && m_day.holds(now);
  m_day = day_window(now, limits.day_start, limits.day_zone);
  m_day_start = limits.day_start;
  m_day_zone = limits.day_zone;
  if (!keep) {
    m_day_requests = 0;
    m_day_tokens = 0;
  }
}

BudgetUse::Saved BudgetUse::save() const {
  return Saved{m_minute, m_minute_requests, m_minute_tokens, m_day, m_day_requests, m_day_tokens};
}

void BudgetUse::restore(const Saved& saved) {
  m_minute = saved.minute;
  m_minute_requests = saved.minute_requests;
  m_minute_tokens = saved.minute_tokens;
  m_day = saved.day;
  m_day_requests = saved.day_requests;
  m_day_tokens = saved.day_tokens;
  m_day_start = -1; // no setting has it: the next roll() works the day out again, keeping its use
}

void BudgetUse::count_request(util::TimePoint now, const config::Limits& limits) {
  roll(now, limits);
  util::add_saturating(m_minute_requests, 1);
  util::add_saturating(m_day_requests, 1);
}

void BudgetUse::count_tokens(util::TimePoint now, const config::Limits& limits, std::uint64_t tokens) {
  roll(now, limits);
  util::add_saturating(m_minute_tokens, tokens);
  util::add_saturating(m_day_tokens, tokens);
}

std::optional<util::TimePoint> BudgetUse::blocked_until(util::TimePoint now, const config::Limits& limits) {
  if (!limits.any()) {
    return std::nullopt;
  }
  roll(now, limits);
  std::optional<util::TimePoint> until;
  auto reached = [&](std::uint64_t limit, std::uint64_t used, const Window& window) {
    if (limit > 0 && used >= limit && (!until || *until < window.ends)) {
      until = window.ends;
    }
  };
  reached(limits.requests_per_minute, m_minute_requests, m_minute);
  reached(limits.requests_per_day, m_day_requests, m_day);
  reached(limits.tokens_per_minute, m_minute_tokens, m_minute);
  reached(limits.tokens_per_day, m_day_tokens, m_day);
  return until;
}

std::vector<LimitUse> BudgetUse::uses(util::TimePoint now, const config::Limits& limits) {
  std::vector<LimitUse> out;
  if (!limits.any()) {
    return out;
  }
  roll(now, limits);
  auto add = [&](const char* name, const char* what, std::uint64_t limit, std::uint64_t used, bool daily) {
    if (limit > 0) {
      out.push_back({name, what, daily ? "day" : "minute", used, limit, daily ? m_day.ends : m_minute.ends});
    }
  };
  add("requests_per_minute", "requests", limits.requests_per_minute, m_minute_requests, false);
  add("requests_per_day", "requests", limits.requests_per_day, m_day_requests, true);
  add("tokens_per_minute", "tokens", limits.tokens_per_minute, m_minute_tokens, false);
  add("tokens_per_day", "tokens", limits.tokens_per_day, m_day_tokens, true);
  return out;
}

} // namespace keyshim::pool
