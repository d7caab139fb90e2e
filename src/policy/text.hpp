#pragma once
// Small ASCII text helpers shared by the policy sources (internal header).
#include "policy/types.hpp"
#include "util/ascii.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::policy::detail {

using util::ascii_lower;
using util::iequals;
using util::to_lower;
using util::trim;

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool contains(std::string_view haystack, std::string_view needle);

// The value of the first header named `name` (case-insensitive), trimmed.
std::optional<std::string_view> header_value(const std::vector<Header>& headers, std::string_view name);

} // namespace keyshim::policy::detail
