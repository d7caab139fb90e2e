// HTTP-date (RFC 9110 §5.6.7) and RFC 3339 timestamps, the two ways providers
// write "come back at": Retry-After and Anthropic's *-reset headers.
#include "policy/retry_hints.hpp"
#include "policy/text.hpp"

#include <array>
#include <chrono>

namespace keyshim::policy {
namespace {

using namespace std::chrono;
using detail::is_alpha;
using detail::is_digit;

// A forward-only reader over the date text.
class Cursor {
public:
  explicit Cursor(std::string_view text) : m_text(text) {}

  bool done() const { return m_pos == m_text.size(); }

  bool literal(char c) {
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }

  bool literal_ci(std::string_view word) {
    if (m_text.size() - m_pos < word.size() || !detail::iequals(m_text.substr(m_pos, word.size()), word)) {
      return false;
    }
    m_pos += word.size();
    return true;
  }

  // Exactly `count` digits (count 0: one or more, at most 9).
  std::optional<int> digits(std::size_t count) {
    std::size_t start = m_pos;
    int value = 0;
    while (m_pos < m_text.size() && is_digit(m_text[m_pos]) && (count == 0 || m_pos - start < count) &&
           m_pos - start < 9) {
      value = value * 10 + (m_text[m_pos] - '0');
      ++m_pos;
    }
    std::size_t got = m_pos - start;
    if (got == 0 || (count != 0 && got != count)) {
      return std::nullopt;
    }
    return value;
  }

  std::string_view word() {
    std::size_t start = m_pos;
    while (m_pos < m_text.size() && is_alpha(m_text[m_pos])) {
      ++m_pos;
    }
    return m_text.substr(start, m_pos - start);
  }

  std::size_t skip_spaces() {
    std::size_t start = m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] == ' ') {
      ++m_pos;
    }
    return m_pos - start;
  }

  // Fractional seconds after '.', as milliseconds (extra digits truncated).
  std::optional<int> fraction_millis() {
    std::size_t start = m_pos;
    int millis = 0;
    int scale = 100;
    while (m_pos < m_text.size() && is_digit(m_text[m_pos])) {
      millis += (m_text[m_pos] - '0') * scale;
      scale /= 10;
      ++m_pos;
    }
    if (m_pos == start) {
      return std::nullopt;
    }
    return millis;
  }

private:
  std::string_view m_text;
  std::size_t m_pos = 0;
};

constexpr std::array<std::string_view, 12> k_months = {"jan", "feb", "mar", "apr", "may", "jun",
                                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> k_short_days = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr std::array<std::string_view, 7> k_long_days = {"monday", "tuesday",  "wednesday", "thursday",
                                                         "friday", "saturday", "sunday"};

std::optional<unsigned> month_number(std::string_view name) {
  for (std::size_t i = 0; i < k_months.size(); ++i) {
    if (detail::iequals(name, k_months[i])) {
      return static_cast<unsigned>(i + 1);
    }
  }
  return std::nullopt;
}

template <std::size_t N> bool is_one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::string_view candidate : names) {
    if (detail::iequals(name, candidate)) {
      return true;
    }
  }
  return false;
}

using UtcMillis = sys_time<milliseconds>;

// Assemble a UTC time, rejecting impossible dates ("Feb 30") and times. In
// milliseconds, which hold every four-digit year; util::TimePoint does not.
std::optional<UtcMillis> make_time(int y, unsigned mon, unsigned d, int h, int min, int s, int ms = 0) {
  year_month_day date{year{y}, month{mon}, day{d}};
  // 60 is a leap second; it reads as the next minute's first second.
  if (!date.ok() || h > 23 || min > 59 || s > 60) {
    return std::nullopt;
  }
  return UtcMillis(sys_days(date)) + hours(h) + minutes(min) + seconds(s) + milliseconds(ms);
}

// util::TimePoint counts nanoseconds and ends in 2262. A later date clamps to
// its end instead of wrapping: a wrapped "Retry-After: ... 2500" read as a
// date in the past, a one-second cooldown for a provider that asked for ages.
util::TimePoint to_time_point(UtcMillis when) {
  constexpr UtcMillis k_latest = time_point_cast<milliseconds>(util::TimePoint::max());
  constexpr UtcMillis k_earliest = time_point_cast<milliseconds>(util::TimePoint::min());
  if (when > k_latest) {
    return util::TimePoint::max();
  }
  if (when < k_earliest) {
    return util::TimePoint::min();
  }
  return time_point_cast<util::TimePoint::duration>(when);
}

// "HH:MM:SS"
bool read_clock(Cursor& in, int& h, int& min, int& s) {
  auto hh = in.digits(2);
  if (!hh || !in.literal(':')) {
    return false;
  }
  auto mm = in.digits(2);
  if (!mm || !in.literal(':')) {
    return false;
  }
  auto ss = in.digits(2);
  if (!ss) {
    return false;
  }
  h = *hh;
  min = *mm;
  s = *ss;
  return true;
}

// IMF-fixdate after the weekday: ", 06 Nov 1994 08:49:37 GMT"
std::optional<UtcMillis> imf_fixdate(Cursor& in) {
  int h = 0;
  int min = 0;
  int s = 0;
  if (!in.literal(',') || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto d = in.digits(2);
  if (!d || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto mon = month_number(in.word());
  if (!mon || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto y = in.digits(4);
  if (!y || in.skip_spaces() == 0 || !read_clock(in, h, min, s) || in.skip_spaces() == 0 ||
      !in.literal_ci("GMT")) {
    return std::nullopt;
  }
  return make_time(*y, *mon, static_cast<unsigned>(*d), h, min, s);
}

// RFC 850 after the weekday: ", 06-Nov-94 08:49:37 GMT"
std::optional<UtcMillis> rfc850_date(Cursor& in) {
  int h = 0;
  int min = 0;
  int s = 0;
  if (!in.literal(',') || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto d = in.digits(2);
  if (!d || !in.literal('-')) {
    return std::nullopt;
  }
  auto mon = month_number(in.word());
  if (!mon || !in.literal('-')) {
    return std::nullopt;
  }
  auto yy = in.digits(2);
  if (!yy || in.skip_spaces() == 0 || !read_clock(in, h, min, s) || in.skip_spaces() == 0 ||
      !in.literal_ci("GMT")) {
    return std::nullopt;
  }
  // Two-digit years: RFC 9110 reads a year more than 50 years ahead as the
  // last century. A fixed pivot at 70 gives the same answer until 2050+.
  int y = *yy < 70 ? 2000 + *yy : 1900 + *yy;
  return make_time(y, *mon, static_cast<unsigned>(*d), h, min, s);
}

// asctime after the weekday: " Nov  6 08:49:37 1994"
std::optional<UtcMillis> asctime_date(Cursor& in) {
  int h = 0;
  int min = 0;
  int s = 0;
  if (in.skip_spaces() != 1) {
    return std::nullopt;
  }
  auto mon = month_number(in.word());
  if (!mon || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto d = in.digits(0);
  if (!d || *d > 31 || in.skip_spaces() == 0 || !read_clock(in, h, min, s) || in.skip_spaces() == 0) {
    return std::nullopt;
  }
  auto y = in.digits(4);
  if (!y) {
    return std::nullopt;
  }
  return make_time(*y, *mon, static_cast<unsigned>(*d), h, min, s);
}

} // namespace

std::optional<util::TimePoint> parse_http_date(std::string_view text) {
  Cursor in(detail::trim(text));
  std::string_view weekday = in.word();
  std::optional<UtcMillis> result;
  if (is_one_of(weekday, k_long_days)) {
    result = rfc850_date(in);
  } else if (is_one_of(weekday, k_short_days)) {
    // The short weekday starts both IMF-fixdate ("Sun, 06 Nov") and asctime ("Sun Nov  6").
    Cursor probe = in;
    result = imf_fixdate(probe);
    if (result) {
      in = probe;
    } else {
      result = asctime_date(in);
    }
  }
  if (!result || !in.done()) {
    return std::nullopt;
  }
  return to_time_point(*result);
}

std::optional<util::TimePoint> parse_rfc3339(std::string_view text) {
  Cursor in(detail::trim(text));
  int h = 0;
  int min = 0;
  int s = 0;
  auto y = in.digits(4);
  if (!y || !in.literal('-')) {
    return std::nullopt;
  }
  auto mon = in.digits(2);
  if (!mon || !in.literal('-')) {
    return std::nullopt;
  }
  auto d = in.digits(2);
  if (!d || !(in.literal('T') || in.literal('t') || in.literal(' ')) || !read_clock(in, h, min, s)) {
    return std::nullopt;
  }
  int ms = 0;
  if (in.literal('.')) {
    auto fraction = in.fraction_millis();
    if (!fraction) {
      return std::nullopt;
    }
    ms = *fraction;
  }
  minutes offset{0};
  if (!(in.literal('Z') || in.literal('z'))) {
    int sign = in.literal('+') ? 1 : (in.literal('-') ? -1 : 0);
    auto oh = in.digits(2);
    if (sign == 0 || !oh || !in.literal(':')) {
      return std::nullopt;
    }
    auto om = in.digits(2);
    if (!om || *oh > 23 || *om > 59) {
      return std::nullopt;
    }
    offset = minutes(sign * (*oh * 60 + *om));
  }
  if (!in.done()) {
    return std::nullopt;
  }
  auto local = make_time(*y, static_cast<unsigned>(*mon), static_cast<unsigned>(*d), h, min, s, ms);
  if (!local) {
    return std::nullopt;
  }
  // "12:00+02:00" is 10:00 UTC.
  return to_time_point(*local - offset);
}

} // namespace keyshim::policy
