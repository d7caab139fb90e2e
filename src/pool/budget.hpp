#pragma once
// Limits of one's own (config::Limits): what a key used in the current
// minute and day, and when a key that reached a limit may be used again.
// Pure arithmetic on the times it is given. Not thread-safe by itself: the
// key's HealthCell holds it, under the cell's lock.
#include "config/config.hpp"
#include "util/clock.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace keyshim::pool {

// [begins, ends): the span one limit counts in.
struct Window {
  util::TimePoint begins{};
  util::TimePoint ends{};

  bool holds(util::TimePoint t) const { return begins <= t && t < ends; }
};

// The clock minute holding `now`. Fixed windows, aligned to the minute: easy
// to read in status and to name in Retry-After. Every zone keyshim accepts
// is a whole number of minutes off UTC, so UTC minutes are everyone's.
Window minute_window(util::TimePoint now);

// The day holding `now` that begins `day_start` minutes after midnight in
// `zone`: 24 hours, or 23 or 25 across a daylight-saving change. It always
// holds `now` and is never empty, whatever the zone does.
Window day_window(util::TimePoint now, int day_start, const config::DayZone& zone);

// One limit that is set, and the use against it.
struct LimitUse {
  const char* name = "";  // the setting: "requests_per_minute", ...
  const char* what = "";  // "requests" or "tokens"
  const char* per = "";   // "minute" or "day"
  std::uint64_t used = 0; // in the current window; may pass the limit (tokens arrive after the fact)
  std::uint64_t limit = 0;
  util::TimePoint resets{}; // when the current window ends
};

// What a key used in its current windows. Requests count when a request
// takes the key, tokens when a response reports them, so a response may
// take its tokens past a limit; the key is then skipped until the window
// ends. The pool counts only while the key has a limit.
class BudgetUse {
public:
  void count_request(util::TimePoint now, const config::Limits& limits);
  void count_tokens(util::TimePoint now, const config::Limits& limits, std::uint64_t tokens);
  // When a key whose use reached one of `limits` may be used again: the end
  // of the latest window whose limit is reached. nullopt while under all.
  std::optional<util::TimePoint> blocked_until(util::TimePoint now, const config::Limits& limits);
  // The use against each limit that is set, in the order of the settings.
  std::vector<LimitUse> uses(util::TimePoint now, const config::Limits& limits);

  // What a restart keeps (pool/saved_health.hpp): the windows and the use
  // counted in them.
  struct Saved {
    Window minute;
    std::uint64_t minute_requests = 0;
    std::uint64_t minute_tokens = 0;
    Window day;
    std::uint64_t day_requests = 0;
    std::uint64_t day_tokens = 0;
  };
  Saved save() const;
  // Take `saved` back. Its use counts on while its windows hold the time of
  // the next call; the day is worked out again from the limits then given,
  // as after a reload that moves it.
  void restore(const Saved& saved);

private:
  // Moves to the windows holding `now`: one that ended starts from zero.
  void roll(util::TimePoint now, const config::Limits& limits);

  Window m_minute;
  std::uint64_t m_minute_requests = 0;
  std::uint64_t m_minute_tokens = 0;
  Window m_day;
  int m_day_start = 0; // what m_day was worked out for: a reload may change it
  config::DayZone m_day_zone;
  std::uint64_t m_day_requests = 0;
  std::uint64_t m_day_tokens = 0;
};

} // namespace keyshim::pool
