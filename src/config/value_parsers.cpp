#include "config/value_parsers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

namespace keyshim::config {
namespace {

constexpr std::array<std::pair<std::string_view, AuthStyle>, 4> k_auth_styles = {{
    {"bearer", AuthStyle::bearer},
    {"x-api-key", AuthStyle::x_api_key},
    {"x-goog-api-key", AuthStyle::x_goog_api_key},
    {"api-key", AuthStyle::api_key},
}};

constexpr std::array<std::pair<std::string_view, Strategy>, 3> k_strategies = {{
    {"ordered", Strategy::ordered},
    {"round-robin", Strategy::round_robin},
    {"least-recently-used", Strategy::least_recently_used},
}};

constexpr std::array<std::pair<std::string_view, std::uint64_t>, 4> k_size_units = {{
    {"B", 1},
    {"KiB", 1024},
    {"MiB", 1024ull * 1024},
    {"GiB", 1024ull * 1024 * 1024},
}};

constexpr std::array<std::pair<char, std::uint64_t>, 4> k_count_units = {{
    {'K', 1000},
    {'k', 1000},
    {'M', 1000ull * 1000},
    {'G', 1000ull * 1000 * 1000},
}};

constexpr std::size_t k_max_label_length = 64;
constexpr int k_max_utc_offset_minutes = 14 * 60; // Kiribati's +14:00 is the farthest

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "07" -> 7: exactly two digits.
std::optional<int> two_digits(std::string_view text) {
  if (text.size() != 2 || !is_digit(text[0]) || !is_digit(text[1])) {
    return std::nullopt;
  }
  return (text[0] - '0') * 10 + (text[1] - '0');
}

bool is_query_param_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("-_.@+/~").find(c) != std::string_view::npos;
}

} // namespace

std::optional<Auth> parse_auth(std::string_view text, std::string& error) {
  for (const auto& [name, style] : k_auth_styles) {
    if (text == name) {
      return Auth{style, ""};
    }
  }
  constexpr std::string_view k_query = "query:";
  if (text.substr(0, k_query.size()) == k_query) {
    std::string_view param = text.substr(k_query.size());
    bool valid = !param.empty();
    for (char c : param) {
      valid = valid && is_query_param_char(c);
    }
    if (valid) {
      return Auth{AuthStyle::query, std::string(param)};
    }
    error = "needs a parameter name (letters, digits, _ - .) after \"query:\", like \"query:key\"";
    return std::nullopt;
  }
  error = fmt::format("must be one of bearer, x-api-key, x-goog-api-key, api-key or query:NAME, "
                      "not \"{}\"",
                      text);
  return std::nullopt;
}

std::optional<Strategy> parse_strategy(std::string_view text, std::string& error) {
  for (const auto& [name, strategy] : k_strategies) {
    if (text == name) {
      return strategy;
    }
  }
  error = fmt::format("must be one of ordered, round-robin or least-recently-used, not \"{}\"", text);
  return std::nullopt;
}

std::optional<CaptureMode> parse_capture_mode(std::string_view text, std::string& error) {
  for (CaptureMode mode : {CaptureMode::off, CaptureMode::errors, CaptureMode::all}) {
    if (text == to_string(mode)) {
      return mode;
    }
  }
  error = fmt::format("must be one of off, errors or all, not \"{}\"", text);
  return std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end == text.data()) {
    return std::nullopt;
  }
  std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  if (unit.empty()) {
    return number;
  }
  for (const auto& [name, factor] : k_size_units) {
    if (unit == name) {
      if (number > UINT64_MAX / factor) {
        return std::nullopt;
      }
      return number * factor;
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t factor = 1;
  if (!text.empty()) {
    for (const auto& [unit, unit_factor] : k_count_units) {
      if (text.back() == unit) {
        factor = unit_factor;
        text.remove_suffix(1);
        break;
      }
    }
  }
  // Whole digits, then at most as many decimals as the unit has zeros:
  // "1.5M" is 1500000, "1.5" alone is not a count.
  std::size_t point = text.find('.');
  std::string_view whole = text.substr(0, point);
  std::string_view decimals = point == std::string_view::npos ? "" : text.substr(point + 1);
  if (whole.empty() || (point != std::string_view::npos && decimals.empty()) ||
      !std::all_of(whole.begin(), whole.end(), is_digit) ||
      !std::all_of(decimals.begin(), decimals.end(), is_digit)) {
    return std::nullopt;
  }
  std::uint64_t scale = factor;
  std::uint64_t fraction = 0;
  for (char c : decimals) {
    if (scale % 10 != 0) {
      return std::nullopt; // finer than one
    }
    scale /= 10;
    fraction += static_cast<std::uint64_t>(c - '0') * scale;
  }
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), number);
  if (ec != std::errc() || end != whole.data() + whole.size() || number > (UINT64_MAX - fraction) / factor) {
    return std::nullopt;
  }
  return number * factor + fraction;
}

std::optional<int> parse_time_of_day(std::string_view text) {
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  std::optional<int> hours = two_digits(text.substr(0, colon));
  std::optional<int> minutes = two_digits(text.substr(colon + 1));
  if (!hours || !minutes || *hours > 23 || *minutes > 59) {
    return std::nullopt;
  }
  return *hours * 60 + *minutes;
}

std::optional<DayZone> parse_day_zone(std::string_view text, std::string& error) {
  if (text == "local") {
    return DayZone{};
  }
  if (text == "UTC" || text == "utc") {
    return DayZone{false, 0};
  }
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    std::optional<int> minutes = parse_time_of_day(text.substr(1));
    if (minutes && *minutes <= k_max_utc_offset_minutes) {
      return DayZone{false, text[0] == '-' ? -*minutes : *minutes};
    }
  }
  error = fmt::format("must be \"local\" (this machine's time zone), \"UTC\" or an offset from UTC like "
                      "\"+02:00\" or \"-08:00\", not \"{}\"",
                      text);
  if (text.find('/') != std::string_view::npos) {
    error += "; zone names are not read: write its offset, or \"local\" when it is this machine's zone";
  }
  return std::nullopt;
}

std::string label_problem(std::string_view label) {
  if (label.empty()) {
    return "is empty; name the key, or remove \"label\" to use its fingerprint";
  }
  if (label.size() > k_max_label_length) {
    return fmt::format("is longer than {} characters", k_max_label_length);
  }
  for (char c : label) {
    if (!is_label_char(c)) {
      return fmt::format("may only contain letters, digits and - _ . @ + / ~, not \"{}\" (it appears "
                         "in log lines as key=LABEL)",
                         label);
    }
  }
  return "";
}

std::string key_material_problem(std::string_view material) {
  if (material.empty()) {
    return "is empty";
  }
  for (char c : material) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      return "contains whitespace, control or non-ASCII characters, which cannot be sent in an "
             "HTTP header";
    }
  }
  return "";
}

} // namespace keyshim::config
