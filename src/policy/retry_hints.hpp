#pragma once
// How long a provider asks us to wait, from its headers or error body.
#include "policy/types.hpp"
#include "util/clock.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::policy {

struct RetryHint {
  milliseconds wait{0};
  std::string source; // "Retry-After", "x-ratelimit-reset-requests", "retryDelay", "body", "daily quota"
};

// In the order of docs/behaviour.md §6: Retry-After (seconds or HTTP date),
// retry-after-ms, provider reset headers (x-ratelimit-reset-*,
// anthropic-ratelimit-*-reset), then a hint in the body ("retry in 12.5s",
// Gemini RetryInfo retryDelay), then a per-day quota (cools until its reset).
// One exception: a Gemini QuotaFailure naming a PerDay quota outranks the body
// hints, whose short delay would only buy another 429. `wait` is never
// negative. nullopt when there is none.
std::optional<RetryHint> find_retry_hint(const std::vector<Header>& headers, std::string_view body,
                                         util::TimePoint now);

// An OpenAI `x-ratelimit-reset-*` value as a wait from `now`: a duration
// ("6m0s", "20ms", "1h2m3.5s"), or plain seconds or an epoch time (seconds
// or milliseconds) as compatible servers write it. Never negative; values
// over 40 characters are refused.
std::optional<milliseconds> parse_openai_reset(std::string_view value, util::TimePoint now);

// The next reset of a provider's daily quota after `now`: midnight Pacific
// time, taken as 08:00 UTC (up to an hour late during daylight time).
util::TimePoint next_daily_reset(util::TimePoint now);

// RFC 9110 HTTP-date (IMF-fixdate, and the obsolete RFC 850 / asctime forms).
// `now` places RFC 850's two-digit year (at most 50 years after now's year).
// Dates beyond util::TimePoint's range (after 2262) clamp to its end, never wrap.
std::optional<util::TimePoint> parse_http_date(std::string_view text, util::TimePoint now);
// RFC 3339 timestamp, e.g. "2026-11-29T21:40:01Z" or with offset/fraction.
// Clamps like parse_http_date.
std::optional<util::TimePoint> parse_rfc3339(std::string_view text);

} // namespace keyshim::policy
