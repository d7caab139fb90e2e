// HTTP-date (RFC 9110 §5.6.7) and RFC 3339 timestamps, the two ways providers
// write "come back at": Retry-After and Anthropic's *-reset headers.
//
// libc's strptime reads the HTTP-date fields (RFC 3339's are all digits and
// read directly). It is lenient where the RFCs are not: it
// skips spaces before a number, reads "6" for "06", and takes "Sunday" for
// %a or "November" for %b. So each form is first matched against its exact
// layout (digit counts, single spaces, "GMT"), and strptime then reads the
// values and checks the names and ranges. Its names (%a, %b) are the current
// locale's: keyshim never calls setlocale, so that is the C locale, whose
// names are the English ones HTTP uses (compared case-insensitively).
#include "policy/retry_hints.hpp"
#include "policy/text.hpp"

#include <chrono>
#include <ctime>
#include <string>

namespace keyshim::policy {
namespace {

using namespace std::chrono;

// Whether `c` fits layout character `want`: 'D' is a digit, 'A' a letter,
// '_' a space or a digit, '?' any character; any other character stands for
// itself (letters in either case).
bool fits(char c, char want) {
  switch (want) {
  case 'D':
    return detail::is_digit(c);
  case 'A':
    return detail::is_alpha(c);
  case '_':
    return c == ' ' || detail::is_digit(c);
  case '?':
    return true;
  default:
    return detail::ascii_lower(c) == detail::ascii_lower(want);
  }
}

// Whether `text` has exactly the shape of `layout`, character by character.
bool fits(std::string_view text, std::string_view layout) {
  if (text.size() != layout.size()) {
    return false;
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!fits(text[i], layout[i])) {
      return false;
    }
  }
  return true;
}

// strptime over all of `text` (which needs a terminating NUL, hence the copy);
// nullopt unless it reads every character.
std::optional<std::tm> read_fields(std::string_view text, const char* format) {
  std::string copy(text);
  std::tm fields{};
  const char* end = ::strptime(copy.c_str(), format, &fields);
  if (end == nullptr || end != copy.c_str() + copy.size()) {
    return std::nullopt;
  }
  return fields;
}

// The fields as a UTC time, rejecting impossible dates ("Feb 30"). Not
// timegm: it would quietly roll "31 Feb" over into March, and its -1 for an
// error is also 1969-12-31 23:59:59. Second 60 is a leap second; it reads as
// the next minute's first second.
std::optional<sys_seconds> to_utc(const std::tm& fields) {
  year_month_day date{year{fields.tm_year + 1900}, month{static_cast<unsigned>(fields.tm_mon + 1)},
                      day{static_cast<unsigned>(fields.tm_mday)}};
  if (!date.ok() || fields.tm_sec > 60) {
    return std::nullopt;
  }
  return sys_days(date) + hours(fields.tm_hour) + minutes(fields.tm_min) + seconds(fields.tm_sec);
}

// util::TimePoint counts nanoseconds and ends in 2262. A later date clamps to
// its end instead of wrapping: a wrapped "Retry-After: ... 2500" read as a
// date in the past, a one-second cooldown for a provider that asked for ages.
util::TimePoint to_time_point(sys_time<milliseconds> when) {
  constexpr sys_time<milliseconds> k_latest = time_point_cast<milliseconds>(util::TimePoint::max());
  constexpr sys_time<milliseconds> k_earliest = time_point_cast<milliseconds>(util::TimePoint::min());
  if (when > k_latest) {
    return util::TimePoint::max();
  }
  if (when < k_earliest) {
    return util::TimePoint::min();
  }
  return time_point_cast<util::TimePoint::duration>(when);
}

// RFC 9110: a two-digit year more than 50 years in the future is the most
// recent past year with the same last two digits. That is the latest year
// with those digits that is at most 50 years after `now`'s.
int full_year(int two_digits, util::TimePoint now) {
  int latest = static_cast<int>(year_month_day{floor<days>(now)}.year()) + 50;
  return latest - (((latest - two_digits) % 100) + 100) % 100;
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<sys_seconds> imf_fixdate(std::string_view text) {
  if (!fits(text, "AAA, DD AAA DDDD DD:DD:DD GMT")) {
    return std::nullopt;
  }
  auto fields = read_fields(text.substr(0, text.size() - 4), "%a, %d %b %Y %H:%M:%S");
  return fields ? to_utc(*fields) : std::nullopt;
}

// "Sunday, 06-Nov-94 08:49:37 GMT" (obsolete): the weekday in full.
std::optional<sys_seconds> rfc850_date(std::string_view text, util::TimePoint now) {
  std::size_t comma = text.find(',');
  if (comma == std::string_view::npos || comma < 6 || !fits(text.substr(comma), ", DD-AAA-DD DD:DD:DD GMT")) {
    return std::nullopt;
  }
  auto fields = read_fields(text.substr(0, text.size() - 4), "%A, %d-%b-%y %H:%M:%S");
  if (!fields) {
    return std::nullopt;
  }
  fields->tm_year = full_year(fields->tm_year % 100, now) - 1900;
  return to_utc(*fields);
}

// "Sun Nov  6 08:49:37 1994" (obsolete); "Nov 6" is taken as well.
std::optional<sys_seconds> asctime_date(std::string_view text) {
  if (!fits(text, "AAA AAA _D DD:DD:DD DDDD") && !fits(text, "AAA AAA D DD:DD:DD DDDD")) {
    return std::nullopt;
  }
  // A space in the format matches any run of spaces, so "Nov  6" reads too.
  auto fields = read_fields(text, "%a %b %d %H:%M:%S %Y");
  return fields ? to_utc(*fields) : std::nullopt;
}

// The rest of an RFC 3339 timestamp after the seconds: an optional fraction
// (as milliseconds, further digits dropped), then "Z" or "+HH:MM"/"-HH:MM".
// Returns what to subtract to get UTC, and adds the fraction to `millis`.
std::optional<minutes> rfc3339_tail(std::string_view tail, milliseconds& millis) {
  if (!tail.empty() && tail.front() == '.') {
    std::size_t digits = 1;
    for (int scale = 100; digits < tail.size() && detail::is_digit(tail[digits]); ++digits, scale /= 10) {
      millis += milliseconds((tail[digits] - '0') * scale);
    }
    if (digits == 1) {
      return std::nullopt;
    }
    tail.remove_prefix(digits);
  }
  if (tail == "Z" || tail == "z") {
    return minutes(0);
  }
  if (!fits(tail, "?DD:DD") || (tail.front() != '+' && tail.front() != '-')) {
    return std::nullopt;
  }
  int oh = (tail[1] - '0') * 10 + (tail[2] - '0');
  int om = (tail[4] - '0') * 10 + (tail[5] - '0');
  if (oh > 23 || om > 59) {
    return std::nullopt;
  }
  return minutes((tail.front() == '-' ? -1 : 1) * (oh * 60 + om));
}

} // namespace

std::optional<util::TimePoint> parse_http_date(std::string_view text, util::TimePoint now) {
  text = detail::trim(text);
  std::optional<sys_seconds> result = imf_fixdate(text);
  if (!result) {
    result = rfc850_date(text, now);
  }
  if (!result) {
    result = asctime_date(text);
  }
  if (!result) {
    return std::nullopt;
  }
  return to_time_point(*result);
}

std::optional<util::TimePoint> parse_rfc3339(std::string_view text) {
  text = detail::trim(text);
  constexpr std::size_t k_seconds_end = 19; // "2026-11-29T21:40:01"
  if (text.size() < k_seconds_end || !fits(text.substr(0, k_seconds_end), "DDDD-DD-DD?DD:DD:DD") ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ')) {
    return std::nullopt;
  }
  // Every field is digits in a checked layout, so they are read here rather
  // than by strptime: Anthropic's resets come on every response (§4.1), and
  // strptime wants a NUL-terminated copy.
  auto number = [&](std::size_t at, std::size_t count) {
    int value = 0;
    for (std::size_t i = at; i < at + count; ++i) {
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  std::tm fields{};
  fields.tm_year = number(0, 4) - 1900;
  fields.tm_mon = number(5, 2) - 1;
  fields.tm_mday = number(8, 2);
  fields.tm_hour = number(11, 2);
  fields.tm_min = number(14, 2);
  fields.tm_sec = number(17, 2);
  bool clock_ok = fields.tm_hour <= 23 && fields.tm_min <= 59;
  auto utc = clock_ok ? to_utc(fields) : std::nullopt;
  milliseconds millis{0};
  auto offset = utc ? rfc3339_tail(text.substr(k_seconds_end), millis) : std::nullopt;
  if (!offset) {
    return std::nullopt;
  }
  // "12:00+02:00" is 10:00 UTC.
  return to_time_point(*utc + millis - *offset);
}

} // namespace keyshim::policy
