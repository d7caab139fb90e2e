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

// The kind a (lowercase) name's word stands for.
std::optional<QuotaKind> kind_named(std::string_view word) {
  if (word == "requests") {
    return QuotaKind::requests;
  }
  if (word == "tokens") {
    return QuotaKind::tokens;
  }
  if (word == "input-tokens") {
    return QuotaKind::input_tokens;
  }
  if (word == "output-tokens") {
    return QuotaKind::output_tokens;
  }
  return std::nullopt;
}

// A plain count: digits only, spaces or tabs around them. By hand rather than
// trim and from_chars: a response carries several, and this is a tenth of
// the cost.
std::optional<std::uint64_t> parse_count(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && blank(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && blank(text.back())) {
    text.remove_suffix(1);
  }
  if (text.empty() || text.size() > k_max_count_digits) {
    return std::nullopt;
  }
  std::uint64_t value = 0; // at most 15 digits: cannot overflow
  for (char c : text) {
    if (!is_digit(c)) {
      return std::nullopt;
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

// Anthropic's RFC 3339 times; OpenAI's durations (or the seconds and epoch
// times compatible servers write); the unified epoch seconds. The forms do
// not overlap, so the value tells which it is.
// Go's duration text, as OpenAI writes its resets ("6m0s", "20ms",
// "1h2m3.5s", "17.087s"), in whole microseconds rounded up to milliseconds.
// Integers only and no allocation: it runs on every response. Each number
// has at most 9 digits (and 6 after the point), so nothing overflows.
std::optional<milliseconds> parse_go_duration(std::string_view text) {
  constexpr std::uint64_t k_cap_us = 1'000'000'000'000'000; // ~31 years: only a bound
  std::uint64_t total_us = 0;
  std::size_t i = 0;
  auto digit_at = [&](std::size_t at) { return at < text.size() && is_digit(text[at]); };
  while (i < text.size()) {
    std::uint64_t whole = 0;
    std::uint64_t fraction = 0;
    std::uint64_t scale = 1;
    std::size_t start = i;
    for (; digit_at(i); ++i) {
      whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    std::size_t whole_digits = i - start;
    if (i < text.size() && text[i] == '.') {
      for (++i; digit_at(i); ++i) {
        if (scale < 1'000'000) {
          fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
          scale *= 10;
        }
      }
    }
    if (whole_digits > 9 || i == start || (whole_digits == 0 && scale == 1)) {
      return std::nullopt;
    }
    std::string_view unit = text.substr(i, 2);
    std::uint64_t unit_us = 0;
    if (unit == "ms") {
      unit_us = 1000;
      i += 2;
    } else if (unit == "us") {
      unit_us = 1;
      i += 2;
    } else if (!unit.empty() && (unit[0] == 'h' || unit[0] == 'm' || unit[0] == 's')) {
      unit_us = unit[0] == 'h' ? 3'600'000'000 : unit[0] == 'm' ? 60'000'000 : 1'000'000;
      i += 1;
    } else {
      return std::nullopt; // "ns", a bare number, an unknown unit: not this form
    }
    total_us += whole * unit_us + fraction * unit_us / scale;
    if (total_us > k_cap_us) {
      return std::nullopt;
    }
  }
  return milliseconds((total_us + 999) / 1000);
}

// OpenAI's durations; Anthropic's RFC 3339 times; the unified epoch seconds
// (and the plain seconds or epoch times compatible servers write). The forms
// do not overlap, so the value tells which it is; the cheapest goes first.
std::optional<util::TimePoint> parse_reset(std::string_view text, util::TimePoint now) {
  if (text.empty()) {
    return std::nullopt;
  }
  text = trim(text);
  if (text.empty() || text.size() > 40) {
    return std::nullopt;
  }
  std::optional<util::TimePoint> when;
  std::optional<milliseconds> wait = parse_go_duration(text);
  if (!wait) {
    when = parse_rfc3339(text);
  }
  if (!wait && !when) {
    wait = parse_openai_reset(text, now);
  }
  if (wait) {
    if (*wait > k_reset_ahead) {
      return std::nullopt;
    }
    when = now + *wait;
  }
  // Compare before subtracting: a clamped far date must not overflow.
  if (!when || *when > now + k_reset_ahead || *when < now - k_reset_behind) {
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

std::string_view& QuotaReader::slot(QuotaKind kind, Figure figure) {
  return m_values.at(static_cast<std::size_t>(kind) * 3 + static_cast<std::size_t>(figure));
}

const std::string_view& QuotaReader::slot(QuotaKind kind, Figure figure) const {
  return m_values.at(static_cast<std::size_t>(kind) * 3 + static_cast<std::size_t>(figure));
}

// The figures, as the words rate-limit names use for them.
struct FigureWord {
  std::string_view word;
  QuotaReader::Figure figure;
};
constexpr std::array<FigureWord, 3> k_figure_words = {{{"limit", QuotaReader::Figure::limit},
                                                       {"remaining", QuotaReader::Figure::remaining},
                                                       {"reset", QuotaReader::Figure::reset}}};

void QuotaReader::keep(QuotaKind kind, Figure figure, std::string_view value) {
  std::string_view& target = slot(kind, figure);
  if (target.empty()) {
    target = value; // the first of a repeated field counts, as for every other header
    m_seen = true;
  }
}

// Providers send these names in lowercase (HTTP/2 requires it), so they
// are compared as they are; only a name with an uppercase letter is
// lowercased first. This runs for each rate-limit field of every response.
void QuotaReader::add_named(std::string_view name, std::string_view value) {
  if (add_lowercase(name, value) || name.size() > 64 ||
      std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return;
  }
  std::array<char, 64> buffer{};
  std::transform(name.begin(), name.end(), buffer.begin(), detail::ascii_lower);
  add_lowercase(std::string_view(buffer.data(), name.size()), value);
}

// Whether `name` has a rate-limit prefix (it is kept when it names a figure).
bool QuotaReader::add_lowercase(std::string_view name, std::string_view value) {
  if (name.starts_with(k_openai_prefix)) {
    // x-ratelimit-{limit,remaining,reset}-{requests,tokens}
    std::string_view rest = name.substr(k_openai_prefix.size());
    for (const auto& [word, figure] : k_figure_words) {
      if (rest.size() > word.size() && rest.starts_with(word) && rest[word.size()] == '-') {
        if (std::optional<QuotaKind> kind = kind_named(rest.substr(word.size() + 1))) {
          keep(*kind, figure, value);
        }
        break;
      }
    }
    return true;
  }
  if (name.starts_with(k_anthropic_prefix)) {
    add_anthropic(name.substr(k_anthropic_prefix.size()), value);
    return true;
  }
  return false;
}

// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset},
// and anthropic-ratelimit-unified-*.
void QuotaReader::add_anthropic(std::string_view rest, std::string_view value) {
  if (rest.starts_with(k_unified_prefix)) {
    add_unified(rest.substr(k_unified_prefix.size()), value);
    return;
  }
  for (const auto& [word, figure] : k_figure_words) {
    if (rest.size() > word.size() && rest.ends_with(word) && rest[rest.size() - word.size() - 1] == '-') {
      if (std::optional<QuotaKind> kind = kind_named(rest.substr(0, rest.size() - word.size() - 1))) {
        keep(*kind, figure, value);
      }
      return;
    }
  }
}

// A Claude subscription's limit: `-status` (allowed, allowed_warning,
// rejected), `-reset`, and a utilisation per window (`-5h-utilization`,
// `-7d-utilization`: windows are named by their length, so they start with
// a digit; `overage` and the like are not windows of the limit).
void QuotaReader::add_unified(std::string_view rest, std::string_view value) {
  constexpr std::string_view k_utilization = "-utilization";
  if (rest == "status") {
    if (m_unified_status.empty()) {
      m_unified_status = value;
      m_seen = true;
    }
  } else if (rest == "reset") {
    std::string_view& target = slot(QuotaKind::unified, Figure::reset);
    if (target.empty()) {
      target = value;
      m_seen = true;
    }
  } else if (rest.size() > k_utilization.size() && is_digit(rest.front()) &&
             rest.substr(rest.size() - k_utilization.size()) == k_utilization) {
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
