// Where providers say how long to wait, most authoritative first.
#include "policy/retry_hints.hpp"

#include "policy/text.hpp"
#include "util/duration.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace keyshim::policy {
namespace {

using namespace std::chrono;
using detail::contains;
using detail::header_value;
using detail::is_alpha;
using detail::is_digit;

// Longer hint texts are not hints: refusing them also keeps util::parse_duration's
// number conversion far from overflow on hostile input.
constexpr std::size_t k_max_value_length = 40;

// Compare before subtracting: `when` may be a clamped far past or future
// (parse_http_date), where `when - now` would overflow.
milliseconds until(util::TimePoint when, util::TimePoint now) {
  if (when <= now) {
    return milliseconds(0);
  }
  return duration_cast<milliseconds>(when - now);
}

// A plain non-negative decimal ("120", "1.5"); nullopt otherwise.
std::optional<double> parse_number(std::string_view text) {
  if (text.empty() || text.size() > k_max_value_length || !is_digit(text.front())) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

milliseconds from_seconds(double seconds) {
  // Clamp before converting: a hostile "1e300"-sized value must not overflow.
  return milliseconds(static_cast<long long>(std::llround(std::min(seconds, 1e12) * 1000.0)));
}

// An epoch timestamp as a wait from now. In double seconds, which from_seconds
// clamps: a far-future value must not overflow the nanosecond clock into a
// short wait.
milliseconds until_epoch_seconds(double epoch_seconds, util::TimePoint now) {
  double now_seconds = duration<double>(now.time_since_epoch()).count();
  return from_seconds(std::max(0.0, epoch_seconds - now_seconds));
}

std::optional<milliseconds> parse_duration_text(std::string_view text) {
  if (text.size() > k_max_value_length) {
    return std::nullopt;
  }
  return util::parse_duration(text);
}

std::optional<RetryHint> retry_after(const std::vector<Header>& headers, util::TimePoint now) {
  auto value = header_value(headers, "retry-after");
  if (!value) {
    return std::nullopt;
  }
  if (auto seconds = parse_number(*value)) {
    return RetryHint{from_seconds(*seconds), "Retry-After"};
  }
  if (auto date = parse_http_date(*value, now)) {
    return RetryHint{until(*date, now), "Retry-After"};
  }
  return std::nullopt;
}

std::optional<RetryHint> retry_after_ms(const std::vector<Header>& headers) {
  auto value = header_value(headers, "retry-after-ms");
  if (!value) {
    return std::nullopt;
  }
  if (auto ms = parse_number(*value)) {
    return RetryHint{from_seconds(*ms / 1000.0), "retry-after-ms"};
  }
  return std::nullopt;
}

// One rate limit's reset as a provider reported it.
struct Reset {
  std::string source;
  milliseconds wait{0};
  bool exhausted = false; // its "remaining" header said 0
};

// Among several limits, the one that caused the 429 is the one with nothing
// remaining; when several are spent, all must reset, so the longest wins.
// When no limit reports 0 we cannot tell which one was hit (OpenAI reports
// tokens remaining > 0 when a request asks for more than that), and waiting a
// little longer costs less than another 429, so again the longest wins.
std::optional<RetryHint> pick_reset(const std::vector<Reset>& resets) {
  bool any_exhausted = std::any_of(resets.begin(), resets.end(), [](const Reset& r) { return r.exhausted; });
  const Reset* best = nullptr;
  for (const Reset& reset : resets) {
    if (any_exhausted && !reset.exhausted) {
      continue;
    }
    if (best == nullptr || reset.wait > best->wait) {
      best = &reset;
    }
  }
  if (best == nullptr) {
    return std::nullopt;
  }
  return RetryHint{best->wait, best->source};
}

bool remaining_is_zero(const std::vector<Header>& headers, const std::string& name) {
  auto value = header_value(headers, name);
  auto number = value ? parse_number(*value) : std::nullopt;
  return number && *number == 0;
}

std::optional<RetryHint> openai_reset(const std::vector<Header>& headers, util::TimePoint now) {
  std::vector<Reset> resets;
  for (std::string kind : {"requests", "tokens"}) {
    std::string name = "x-ratelimit-reset-" + kind;
    auto value = header_value(headers, name);
    auto wait = value ? parse_openai_reset(*value, now) : std::nullopt;
    if (wait) {
      resets.push_back(Reset{name, *wait, remaining_is_zero(headers, "x-ratelimit-remaining-" + kind)});
    }
  }
  return pick_reset(resets);
}

std::optional<RetryHint> anthropic_reset(const std::vector<Header>& headers, util::TimePoint now) {
  std::vector<Reset> resets;
  for (std::string kind : {"requests", "tokens", "input-tokens", "output-tokens"}) {
    std::string name = "anthropic-ratelimit-" + kind + "-reset";
    auto value = header_value(headers, name);
    auto when = value ? parse_rfc3339(*value) : std::nullopt;
    if (when) {
      bool exhausted = remaining_is_zero(headers, "anthropic-ratelimit-" + kind + "-remaining");
      resets.push_back(Reset{name, until(*when, now), exhausted});
    }
  }
  return pick_reset(resets);
}

// Seconds per unit word ("s", "sec", "seconds", "min", "hours"...); 0 if none.
double unit_seconds(std::string_view word) {
  static constexpr std::array<std::pair<std::string_view, double>, 17> k_units = {{
      {"ms", 0.001},
      {"millisecond", 0.001},
      {"milliseconds", 0.001},
      {"s", 1},
      {"sec", 1},
      {"secs", 1},
      {"second", 1},
      {"seconds", 1},
      {"m", 60},
      {"min", 60},
      {"mins", 60},
      {"minute", 60},
      {"minutes", 60},
      {"h", 3600},
      {"hr", 3600},
      {"hour", 3600},
      {"hours", 3600},
  }};
  for (const auto& [name, seconds] : k_units) {
    if (word == name) {
      return seconds;
    }
  }
  return 0;
}

// A wait right at `pos` of lowercase text: "12.5s", "6m0s", "3 seconds", "2 minutes".
std::optional<milliseconds> duration_at(std::string_view text, std::size_t pos) {
  while (pos < text.size() && text[pos] == ' ') {
    ++pos;
  }
  std::size_t start = pos;
  while (pos < text.size() && (is_digit(text[pos]) || text[pos] == '.')) {
    ++pos;
  }
  std::string_view number = text.substr(start, pos - start);
  if (number.empty() || !is_digit(number.front())) {
    return std::nullopt;
  }
  // Compact forms glue the unit on: "12.5s", "6m0s", "1h2m3.5s".
  std::size_t end = pos;
  while (end < text.size() && (is_digit(text[end]) || is_alpha(text[end]) || text[end] == '.')) {
    ++end;
  }
  std::string_view compact = text.substr(start, end - start);
  while (!compact.empty() && compact.back() == '.') {
    compact.remove_suffix(1); // the sentence's full stop: "try again in 20s."
  }
  if (auto duration = parse_duration_text(compact)) {
    return duration;
  }
  // Spelled-out forms: "3 seconds", "20sec", "1.5 minutes".
  while (number.back() == '.') {
    number.remove_suffix(1);
  }
  auto value = parse_number(number);
  while (pos < text.size() && text[pos] == ' ') {
    ++pos;
  }
  std::size_t word_start = pos;
  while (pos < text.size() && is_alpha(text[pos])) {
    ++pos;
  }
  double per_unit = unit_seconds(text.substr(word_start, pos - word_start));
  if (!value || per_unit == 0) {
    return std::nullopt;
  }
  return from_seconds(*value * per_unit);
}

// "Please retry in 12.5s", "try again in 20s", "retry after 3 seconds".
std::optional<RetryHint> body_phrase(std::string_view lower_body) {
  for (std::string_view phrase : {"retry in ", "try again in ", "retry after ", "try again after "}) {
    std::size_t at = lower_body.find(phrase);
    while (at != std::string_view::npos) {
      if (auto wait = duration_at(lower_body, at + phrase.size())) {
        return RetryHint{*wait, "body"};
      }
      at = lower_body.find(phrase, at + 1);
    }
  }
  return std::nullopt;
}

// Gemini's google.rpc.RetryInfo: "retryDelay": "38s". Read as text so a
// truncated or odd body still yields the hint.
std::optional<RetryHint> retry_delay(std::string_view lower_body) {
  std::size_t at = lower_body.find("\"retrydelay\"");
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t pos = at + 12;
  auto skip = [&] {
    while (pos < lower_body.size() && detail::is_space(lower_body[pos])) {
      ++pos;
    }
  };
  skip();
  if (pos >= lower_body.size() || lower_body[pos] != ':') {
    return std::nullopt;
  }
  ++pos;
  skip();
  if (pos >= lower_body.size() || lower_body[pos] != '"') {
    return std::nullopt;
  }
  std::size_t close = lower_body.find('"', pos + 1);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  auto wait = parse_duration_text(lower_body.substr(pos + 1, close - pos - 1));
  if (!wait) {
    return std::nullopt;
  }
  return RetryHint{*wait, "retryDelay"};
}

// Gemini names the exhausted quota: QuotaFailure quotaId "...PerDay...".
bool structured_daily_quota(std::string_view lower_body) {
  return contains(lower_body, "\"quotaid\"") && contains(lower_body, "perday");
}

// Wording of a per-day limit without a structured marker: OpenAI's
// "requests per day (RPD)", "daily quota", "daily limit".
bool worded_daily_quota(std::string_view lower_body) {
  for (std::string_view marker : {"per day", "per-day", "perday", "(rpd)", "(tpd)", "daily quota",
                                  "daily limit", "daily request", "daily token", "quota for today"}) {
    if (contains(lower_body, marker)) {
      return true;
    }
  }
  return false;
}

} // namespace

// OpenAI writes durations ("6m0s", "20ms"); some OpenAI-compatible servers
// write plain seconds or an epoch timestamp instead, so accept those too.
std::optional<milliseconds> parse_openai_reset(std::string_view value, util::TimePoint now) {
  if (auto duration = parse_duration_text(value)) {
    return duration;
  }
  auto number = parse_number(value);
  if (!number) {
    return std::nullopt;
  }
  if (*number > 1e12) {
    return until_epoch_seconds(*number / 1000.0, now);
  }
  if (*number > 1e9) {
    return until_epoch_seconds(*number, now);
  }
  return from_seconds(*number);
}

// The daily quotas of the big providers reset at midnight Pacific time. We
// approximate that as 08:00 UTC (midnight PST): during daylight time the
// real reset is 07:00 UTC, so we are conservative by at most one hour and
// never retry a key before its quota is back.
util::TimePoint next_daily_reset(util::TimePoint now) {
  util::TimePoint reset = floor<days>(now) + hours(8);
  if (reset <= now) {
    reset += days(1);
  }
  return reset;
}

std::optional<RetryHint> find_retry_hint(const std::vector<Header>& headers, std::string_view body,
                                         util::TimePoint now) {
  if (auto hint = retry_after(headers, now)) {
    return hint;
  }
  if (auto hint = retry_after_ms(headers)) {
    return hint;
  }
  if (auto hint = openai_reset(headers, now)) {
    return hint;
  }
  if (auto hint = anthropic_reset(headers, now)) {
    return hint;
  }
  std::string lower = detail::to_lower(body);
  // A structured per-day quota outranks the body's wait hints: Gemini sends
  // "retryDelay": "38s" even when the daily quota is spent, and retrying
  // then only collects another 429.
  if (structured_daily_quota(lower)) {
    return RetryHint{until(next_daily_reset(now), now), "daily quota"};
  }
  if (auto hint = body_phrase(lower)) {
    return hint;
  }
  if (auto hint = retry_delay(lower)) {
    return hint;
  }
  if (worded_daily_quota(lower)) {
    return RetryHint{until(next_daily_reset(now), now), "daily quota"};
  }
  return std::nullopt;
}

} // namespace keyshim::policy
