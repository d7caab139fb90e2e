#include "util/duration.hpp"

#include <fmt/format.h>

#include <cmath>

namespace keyshim::util {
namespace {

// Milliseconds per unit, or 0 when the suffix is not a unit.
double unit_millis(std::string_view unit) {
  if (unit == "ms") {
    return 1;
  }
  if (unit == "s") {
    return 1000;
  }
  if (unit == "m") {
    return 60'000;
  }
  if (unit == "h") {
    return 3'600'000;
  }
  if (unit == "d") {
    return 86'400'000;
  }
  return 0;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

} // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (is_digit(text[i]) || text[i] == '.')) {
      ++i;
    }
    if (i == start) {
      return std::nullopt;
    }
    std::string number(text.substr(start, i - start));
    std::size_t unit_start = i;
    while (i < text.size() && is_alpha(text[i])) {
      ++i;
    }
    double per_unit = unit_millis(text.substr(unit_start, i - unit_start));
    if (per_unit == 0 || number.find('.') != number.rfind('.') || number == ".") {
      return std::nullopt;
    }
    total += std::stod(number) * per_unit;
  }
  if (!std::isfinite(total) || total > 1e15) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(total)));
}

std::string format_duration(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms < 0) {
    ms = 0;
  }
  if (ms < 1000) {
    return fmt::format("{}ms", ms);
  }
  if (ms < 10'000) {
    return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  }
  long long s = ms / 1000;
  if (s < 60) {
    return fmt::format("{}s", s);
  }
  if (s < 3600) {
    return s % 60 ? fmt::format("{}m {}s", s / 60, s % 60) : fmt::format("{}m", s / 60);
  }
  if (s < 86'400) {
    long long m = (s % 3600) / 60;
    return m ? fmt::format("{}h {}m", s / 3600, m) : fmt::format("{}h", s / 3600);
  }
  long long h = (s % 86'400) / 3600;
  return h ? fmt::format("{}d {}h", s / 86'400, h) : fmt::format("{}d", s / 86'400);
}

} // namespace keyshim::util
