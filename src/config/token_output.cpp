#include "config/token_output.hpp"

#include "config/value_parsers.hpp"
#include "util/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <ctime>

namespace keyshim::config {
namespace {

using namespace std::chrono;
using util::Json;

constexpr std::array<std::string_view, 3> k_token_names = {"access_token", "accessToken", "token"};
constexpr std::array<std::string_view, 5> k_time_names = {"expiresOn", "expires_at", "expiry", "token_expiry",
                                                          "expiration"};
// A token output is a small object; deeper nesting is not one.
constexpr int k_max_depth = 8;
// A lifetime longer than a year is taken as a year: the arithmetic stays in
// range however large a number a command prints.
constexpr double k_longest_seconds = 366.0 * 86'400;
// Seconds since the epoch this large are milliseconds (a JavaScript habit):
// 10^12 seconds is the year 33658.
constexpr double k_epoch_millis_from = 1e12;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// The key is the first line: `pass show` prints the password first and
// metadata after it.
std::string first_line_trimmed(std::string_view output) {
  std::string line(output.substr(0, output.find('\n')));
  while (!line.empty() && is_blank(line.back())) {
    line.pop_back();
  }
  return line;
}

// Seconds as a JSON number or as a string of them ("3599", as some token
// endpoints write expires_in).
std::optional<double> seconds_of(const Json& value) {
  if (value.is_number()) {
    return value.as_number();
  }
  if (!value.is_string() || value.as_string().empty() || value.as_string().size() > 20) {
    return std::nullopt;
  }
  const std::string& text = value.as_string();
  double seconds = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return seconds;
}

util::TimePoint from_now(util::TimePoint now, double seconds) {
  seconds = std::clamp(seconds, 0.0, k_longest_seconds);
  return now + duration_cast<util::TimePoint::duration>(duration<double>(seconds));
}

// The instant `value` names: seconds since the epoch, or a time written out;
// no later than a year from `now`.
std::optional<util::TimePoint> instant_of(const Json& value, util::TimePoint now) {
  if (std::optional<double> seconds = seconds_of(value)) {
    double since_epoch = *seconds >= k_epoch_millis_from ? *seconds / 1000 : *seconds;
    double from_then = since_epoch - duration<double>(now.time_since_epoch()).count();
    return from_now(now, from_then);
  }
  std::optional<util::TimePoint> when =
      value.is_string() ? parse_expiry_time(value.as_string()) : std::nullopt;
  return when ? std::optional(std::min(*when, from_now(now, k_longest_seconds))) : std::nullopt;
}

// util::TimePoint counts nanoseconds and ends in 2262: a later time is its end.
util::TimePoint clamped(sys_seconds when) {
  constexpr sys_seconds k_latest = time_point_cast<seconds>(util::TimePoint::max()) - seconds(1);
  return when >= k_latest ? util::TimePoint::max() : time_point_cast<util::TimePoint::duration>(when);
}

// The earliest expiry `object` reports. `unreadable`: it has expiry members,
// but none keyshim can read.
std::optional<util::TimePoint> expiry_of(const Json& object, util::TimePoint now, bool& unreadable) {
  std::optional<util::TimePoint> earliest;
  bool found = false;
  auto take = [&](std::optional<util::TimePoint> when) {
    found = true;
    if (when && (!earliest || *when < *earliest)) {
      earliest = when;
    }
  };
  auto present = [&](std::string_view name) {
    const Json* value = object.find(name);
    return value != nullptr && !value->is_null() ? value : nullptr;
  };
  if (const Json* value = present("expires_in")) {
    std::optional<double> seconds = seconds_of(*value);
    take(seconds ? std::optional(from_now(now, *seconds)) : std::nullopt);
  }
  if (const Json* value = present("expires_on")) {
    take(instant_of(*value, now));
  }
  for (std::string_view name : k_time_names) {
    if (const Json* value = present(name)) {
      take(instant_of(*value, now));
    }
  }
  unreadable = found && !earliest;
  return earliest;
}

// The object holding the token: the output's, or its "credential" object.
const Json* token_holder(const Json& root, const std::string*& token) {
  for (const Json* object : {&root, root.find("credential")}) {
    if (object == nullptr || !object->is_object()) {
      continue;
    }
    for (std::string_view name : k_token_names) {
      if (const Json* value = object->find(name);
          value && value->is_string() && !value->as_string().empty()) {
        token = &value->as_string();
        return object;
      }
    }
  }
  return nullptr;
}

std::optional<TokenOutput> read_json(std::string_view text, util::TimePoint now, std::string& problem) {
  util::JsonError error;
  std::optional<Json> root = util::parse_json(text, &error, k_max_depth);
  if (!root || !root->is_object()) {
    problem = root ? "JSON that is not an object"
                   : fmt::format("JSON keyshim cannot read ({} at byte {})", error.message, error.offset);
    return std::nullopt;
  }
  const std::string* token = nullptr;
  const Json* holder = token_holder(*root, token);
  if (holder == nullptr) {
    problem = "JSON without a token (a string \"access_token\", \"accessToken\" or \"token\")";
    return std::nullopt;
  }
  if (std::string bad = key_material_problem(*token); !bad.empty()) {
    problem = fmt::format("a token that {}", bad);
    return std::nullopt;
  }
  bool unreadable = false;
  std::optional<util::TimePoint> expires = expiry_of(*holder, now, unreadable);
  if (unreadable) {
    problem = "an expiry keyshim cannot read (expires_in and expires_on take seconds, the other names an "
              "RFC 3339 time)";
    return std::nullopt;
  }
  return TokenOutput{util::Secret(*token), expires};
}

// Two digits of `text` at `at`, or -1.
int two_digits(std::string_view text, std::size_t at) {
  if (at + 2 > text.size() || text[at] < '0' || text[at] > '9' || text[at + 1] < '0' || text[at + 1] > '9') {
    return -1;
  }
  return (text[at] - '0') * 10 + (text[at + 1] - '0');
}

// The part after the seconds: an optional fraction, then "Z", an offset or
// nothing (local time). Sets `offset` (what to subtract for UTC) or `local`.
bool read_zone(std::string_view tail, minutes& offset, bool& local) {
  if (!tail.empty() && tail.front() == '.') {
    std::size_t digits = 1;
    while (digits < tail.size() && tail[digits] >= '0' && tail[digits] <= '9') {
      ++digits;
    }
    if (digits == 1) {
      return false;
    }
    tail.remove_prefix(digits);
  }
  local = tail.empty();
  if (local || tail == "Z" || tail == "z") {
    return true;
  }
  int hours = two_digits(tail, 1);
  int mins = two_digits(tail, 4);
  if (tail.size() != 6 || (tail[0] != '+' && tail[0] != '-') || tail[3] != ':' || hours < 0 || hours > 23 ||
      mins < 0 || mins > 59) {
    return false;
  }
  offset = minutes((tail[0] == '-' ? -1 : 1) * (hours * 60 + mins));
  return true;
}

// Local date and time fields as an instant, by the process's time zone.
std::optional<util::TimePoint> local_instant(const year_month_day& date, int hour, int minute, int second) {
  std::tm fields{};
  fields.tm_year = static_cast<int>(date.year()) - 1900;
  fields.tm_mon = static_cast<int>(static_cast<unsigned>(date.month())) - 1;
  fields.tm_mday = static_cast<int>(static_cast<unsigned>(date.day()));
  fields.tm_hour = hour;
  fields.tm_min = minute;
  fields.tm_sec = second;
  fields.tm_isdst = -1;
  std::time_t since_epoch = std::mktime(&fields);
  if (since_epoch == static_cast<std::time_t>(-1)) {
    return std::nullopt;
  }
  return clamped(sys_seconds(seconds(since_epoch)));
}

} // namespace

std::optional<TokenOutput> read_token_output(std::string_view output, util::TimePoint now,
                                             std::string& problem) {
  std::string_view text = output;
  while (!text.empty() && is_blank(text.front())) {
    text.remove_prefix(1);
  }
  if (!text.empty() && text.front() == '{') {
    return read_json(text, now, problem);
  }
  util::Secret key(first_line_trimmed(output));
  if (key.empty()) {
    problem = "nothing";
    return std::nullopt;
  }
  if (std::string bad = key_material_problem(key.reveal()); !bad.empty()) {
    problem = fmt::format("a first line that {}", bad);
    return std::nullopt;
  }
  return TokenOutput{std::move(key), std::nullopt};
}

std::optional<util::TimePoint> parse_expiry_time(std::string_view text) {
  constexpr std::size_t k_seconds_end = 19; // "2026-12-02T19:00:00"
  if (text.size() < k_seconds_end || text[4] != '-' || text[7] != '-' || text[13] != ':' || text[16] != ':' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ')) {
    return std::nullopt;
  }
  int century = two_digits(text, 0);
  int year_in = two_digits(text, 2);
  int month_of = two_digits(text, 5);
  int day_of = two_digits(text, 8);
  int hour = two_digits(text, 11);
  int minute = two_digits(text, 14);
  int second = two_digits(text, 17);
  year_month_day date{year{century * 100 + year_in}, month{static_cast<unsigned>(month_of)},
                      day{static_cast<unsigned>(day_of)}};
  minutes offset{0};
  bool local = false;
  if (century < 0 || year_in < 0 || !date.ok() || hour < 0 || hour > 23 || minute < 0 || minute > 59 ||
      second < 0 || second > 60 || !read_zone(text.substr(k_seconds_end), offset, local)) {
    return std::nullopt;
  }
  if (local) {
    return local_instant(date, hour, minute, second);
  }
  return clamped(sys_days(date) + hours(hour) + minutes(minute) + seconds(second) - offset);
}

std::string first_error_line(std::string_view errors, std::size_t max) {
  std::string line;
  while (!errors.empty() && line.empty()) {
    std::size_t end = errors.find('\n');
    for (char c : errors.substr(0, end)) {
      auto byte = static_cast<unsigned char>(c);
      line += byte < 0x20 || byte == 0x7f ? ' ' : c;
    }
    line.erase(0, line.find_first_not_of(' '));
    line.erase(line.find_last_not_of(' ') + 1);
    errors = end == std::string_view::npos ? std::string_view() : errors.substr(end + 1);
  }
  if (line.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) {
      --cut; // not inside a UTF-8 sequence
    }
    line.resize(cut);
    line += "...";
  }
  return line;
}

} // namespace keyshim::config
