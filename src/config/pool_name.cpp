#include "config/pool_name.hpp"

#include "config/config.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::config {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Consumes the digits at the front of `text`; whether there was one.
bool take_digits(std::string_view& text) {
  std::size_t n = 0;
  while (n < text.size() && is_digit(text[n])) {
    ++n;
  }
  text.remove_prefix(n);
  return n > 0;
}

// Consumes `prefix` and the digits after it; whether the digits were there.
bool take_numbered(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix) {
    return false;
  }
  std::string_view rest = text.substr(prefix.size());
  if (!take_digits(rest)) {
    return false;
  }
  text = rest;
  return true;
}

bool is_name_character(char c) {
  return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_' || c == '.';
}

} // namespace

bool is_api_version_name(std::string_view name) {
  if (!take_numbered(name, "v")) {
    return false;
  }
  while (take_numbered(name, ".")) {
  }
  take_numbered(name, "p");
  for (std::string_view stage : {"alpha", "beta"}) {
    if (name.substr(0, stage.size()) == stage) {
      name.remove_prefix(stage.size());
      take_digits(name);
      break;
    }
  }
  return name.empty();
}

std::string pool_name_problem(std::string_view name) {
  constexpr std::size_t k_longest = 64;
  if (std::find(k_reserved_pool_names.begin(), k_reserved_pool_names.end(), name) !=
      k_reserved_pool_names.end()) {
    return fmt::format("\"{}\" is reserved (it would shadow /{}); choose another pool name", name, name);
  }
  bool first_ok = !name.empty() && ((name[0] >= 'a' && name[0] <= 'z') || is_digit(name[0]));
  if (!first_ok || !std::all_of(name.begin(), name.end(), is_name_character) || name.size() > k_longest) {
    return fmt::format("a pool name is the first part of its URL path: up to {} lowercase letters, digits, "
                       "'-', '_' or '.', starting with a letter or digit",
                       k_longest);
  }
  // Refused with or without a default pool: a tool pointed at the root
  // (http://127.0.0.1:8787) would send its /v1/... requests to this pool
  // with its key, or get 404s that name it.
  if (is_api_version_name(name)) {
    return fmt::format("\"{0}\" reads as an API version: its route /{0} would capture the paths tools send "
                       "to the default pool, such as /{0}/models; choose another pool name",
                       name);
  }
  return "";
}

} // namespace keyshim::config
