// Reading the rate limits providers report on every response. Upstream
// headers are untrusted: every figure is bounded, and anything that does not
// read as one is ignored rather than guessed at.
#include "policy/quota.hpp"

#include "policy/retry_hints.hpp"
#include "policy/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace keyshim::policy {
namespace {

using namespace std::chrono;
using detail::iequals;
using detail::is_digit;
using detail::trim;

constexpr std::string_view k_openai_prefix = "x-ratelimit-";
constexpr std::string_view k_anthropic_prefix = "anthropic-ratelimit-";
constexpr std::string_view k_unified_prefix = "unified-";

// A count of more digits is no provider's: 10^15 tokens is far beyond any limit.
constexpr std::size_t k_max_count_digits = 15;
// A reset further away than a month, or gone by more than a day, is not a
// rate limit's (a clock far off, or garbage): ignored.
constexpr auto k_reset_ahead = days(31);
constexpr auto k_reset_behind = hours(24);
// A spent limit that gives no reset rests as long as a first 429 without a
// hint would cool (docs/behaviour.md §5): per-minute limits are whole again by then.
constexpr milliseconds k_rest_without_reset = seconds(60);
// Unified utilisations are fractions; larger values are not.
constexpr double k_max_utilization = 10.0;

std::optional<QuotaKind> kind_named(std::string_view word) {
  if (iequals(word, "requests")) {
    return QuotaKind::requests;
  }
  if (iequals(word, "tokens")) {
    return QuotaKind::tokens;
  }
  if (iequals(word, "input-tokens")) {
    return QuotaKind::input_tokens;
  }
  if (iequals(word, "output-tokens")) {
    return QuotaKind::output_tokens;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.size() > k_max_count_digits || !std::all_of(text.begin(), text.end(), is_digit)) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value); // at most 15 digits: cannot overflow
  return value;
}

// Anthropic's RFC 3339 times; OpenAI's durations (or the seconds and epoch
// times compatible servers write); the unified epoch seconds. The forms do
// not overlap, so the value tells which it is.
std::optional<util::TimePoint> parse_reset(std::string_view text, util::TimePoint now) {
  text = trim(text);
  if (text.empty()) {
    return std::nullopt;
  }
  std::optional<util::TimePoint> when = parse_rfc3339(text);
  if (!when) {
    std::optional<milliseconds> wait = parse_openai_reset(text, now);
    if (!wait || *wait > k_reset_ahead) {
      return std::nullopt;
    }
    when = now + *wait;
  }
  // Compare before subtracting: a clamped far date must not overflow.
  if (*when > now + k_reset_ahead || *when < now - k_reset_behind) {
    return std::nullopt;
  }
  return when;
}

std::optional<double> parse_utilization(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.size() > 20 || !is_digit(text.front())) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value > k_max_utilization) {
    return std::nullopt;
  }
  return std::min(value, 1.0);
}

std::optional<milliseconds> wait_until(util::TimePoint when, util::TimePoint now) {
  if (when <= now) {
    return std::nullopt;
  }
  return duration_cast<milliseconds>(when - now);
}

std::string spent_reason(QuotaKind kind) {
  switch (kind) {
  case QuotaKind::requests:
    return "quota: 0 requests left";
  case QuotaKind::tokens:
    return "quota: 0 tokens left";
  case QuotaKind::input_tokens:
    return "quota: 0 input tokens left";
  case QuotaKind::output_tokens:
    return "quota: 0 output tokens left";
  case QuotaKind::unified:
    break;
  }
  return "quota: unified limit reached";
}

} // namespace

const char* to_string(QuotaKind kind) {
  switch (kind) {
  case QuotaKind::requests:
    return "requests";
  case QuotaKind::tokens:
    return "tokens";
  case QuotaKind::input_tokens:
    return "input_tokens";
  case QuotaKind::output_tokens:
    return "output_tokens";
  case QuotaKind::unified:
    break;
  }
  return "unified";
}

std::string_view& QuotaReader::slot(QuotaKind kind, Figure figure) {
  return m_values.at(static_cast<std::size_t>(kind) * 3 + static_cast<std::size_t>(figure));
}

const std::string_view& QuotaReader::slot(QuotaKind kind, Figure figure) const {
  return m_values.at(static_cast<std::size_t>(kind) * 3 + static_cast<std::size_t>(figure));
}

void QuotaReader::add(std::string_view name, std::string_view value) {
  if (name.size() <= k_openai_prefix.size()) {
    return;
  }
  const char first = detail::ascii_lower(name.front());
  if (first == 'x' && iequals(name.substr(0, k_openai_prefix.size()), k_openai_prefix)) {
    add_openai(name.substr(k_openai_prefix.size()), value);
  } else if (first == 'a' && name.size() > k_anthropic_prefix.size() &&
             iequals(name.substr(0, k_anthropic_prefix.size()), k_anthropic_prefix)) {
    add_anthropic(name.substr(k_anthropic_prefix.size()), value);
  }
}

// x-ratelimit-{limit,remaining,reset}-{requests,tokens}
void QuotaReader::add_openai(std::string_view rest, std::string_view value) {
  std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos) {
    return;
  }
  std::string_view figure = rest.substr(0, dash);
  std::optional<QuotaKind> kind = kind_named(rest.substr(dash + 1));
  if (!kind || *kind == QuotaKind::unified) {
    return;
  }
  std::string_view* target = iequals(figure, "limit")       ? &slot(*kind, Figure::limit)
                             : iequals(figure, "remaining") ? &slot(*kind, Figure::remaining)
                             : iequals(figure, "reset")     ? &slot(*kind, Figure::reset)
                                                            : nullptr;
  if (target != nullptr && target->empty()) {
    *target = value; // the first of a repeated field counts, as for every other header
    m_seen = true;
  }
}

// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset},
// and anthropic-ratelimit-unified-*.
void QuotaReader::add_anthropic(std::string_view rest, std::string_view value) {
  if (rest.size() > k_unified_prefix.size() &&
      iequals(rest.substr(0, k_unified_prefix.size()), k_unified_prefix)) {
    add_unified(rest.substr(k_unified_prefix.size()), value);
    return;
  }
  std::size_t dash = rest.rfind('-');
  if (dash == std::string_view::npos) {
    return;
  }
  std::string_view figure = rest.substr(dash + 1);
  std::optional<QuotaKind> kind = kind_named(rest.substr(0, dash));
  if (!kind) {
    return;
  }
  std::string_view* target = iequals(figure, "limit")       ? &slot(*kind, Figure::limit)
                             : iequals(figure, "remaining") ? &slot(*kind, Figure::remaining)
                             : iequals(figure, "reset")     ? &slot(*kind, Figure::reset)
                                                            : nullptr;
  if (target != nullptr && target->empty()) {
    *target = value;
    m_seen = true;
  }
}

// A Claude subscription's limit: `-status` (allowed, allowed_warning,
// rejected), `-reset`, and a utilisation per window (`-5h-utilization`,
// `-7d-utilization`: windows are named by their length, so they start with
// a digit; `overage` and the like are not windows of the limit).
void QuotaReader::add_unified(std::string_view rest, std::string_view value) {
  constexpr std::string_view k_utilization = "-utilization";
  if (iequals(rest, "status")) {
    if (m_unified_status.empty()) {
      m_unified_status = value;
      m_seen = true;
    }
  } else if (iequals(rest, "reset")) {
    std::string_view& target = slot(QuotaKind::unified, Figure::reset);
    if (target.empty()) {
      target = value;
      m_seen = true;
    }
  } else if (rest.size() > k_utilization.size() && is_digit(rest.front()) &&
             iequals(rest.substr(rest.size() - k_utilization.size()), k_utilization)) {
    if (std::optional<double> used = parse_utilization(value)) {
      m_utilization = std::max(m_utilization, *used);
      m_seen = true;
    }
  }
}

std::optional<Quota> QuotaReader::read(util::TimePoint now) const {
  if (!m_seen) {
    return std::nullopt;
  }
  Quota quota;
  bool any = false;
  for (std::size_t i = 0; i < k_quota_kinds; ++i) {
    auto kind = static_cast<QuotaKind>(i);
    QuotaFigures& figures = quota[kind];
    figures.limit = parse_count(slot(kind, Figure::limit));
    figures.remaining = parse_count(slot(kind, Figure::remaining));
    figures.reset = parse_reset(slot(kind, Figure::reset), now);
    any = any || figures.limit || figures.remaining || figures.reset;
  }
  // The unified limit in per cent. Only `rejected` spends it: a window at
  // 100 % may still be allowed (overage), and that is the provider's call.
  QuotaFigures& unified = quota[QuotaKind::unified];
  if (iequals(trim(m_unified_status), "rejected")) {
    unified.remaining = 0;
  } else if (m_utilization >= 0) {
    auto used = static_cast<std::uint64_t>(std::ceil(m_utilization * 100.0));
    unified.remaining = std::max<std::uint64_t>(1, 100 - std::min<std::uint64_t>(used, 100));
  }
  if (unified.remaining) {
    unified.limit = 100;
    any = true;
  }
  if (!any) {
    return std::nullopt;
  }
  return quota;
}

std::optional<SetAside> quota_set_aside(const Quota& quota, util::TimePoint now, milliseconds max) {
  std::optional<SetAside> longest;
  for (std::size_t i = 0; i < k_quota_kinds; ++i) {
    auto kind = static_cast<QuotaKind>(i);
    const QuotaFigures& figures = quota[kind];
    if (figures.remaining != std::uint64_t{0}) {
      continue;
    }
    // A reset that has passed means the limit is whole again.
    std::optional<milliseconds> wait = figures.reset ? wait_until(*figures.reset, now) : k_rest_without_reset;
    if (wait && (!longest || *wait > longest->wait)) {
      longest = SetAside{*wait, spent_reason(kind)};
    }
  }
  if (longest) {
    longest->wait = std::min(longest->wait, max);
  }
  return longest;
}

} // namespace keyshim::policy
