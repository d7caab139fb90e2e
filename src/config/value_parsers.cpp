#include "config/value_parsers.hpp"

#include <fmt/format.h>

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

constexpr std::size_t k_max_label_length = 64;

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
