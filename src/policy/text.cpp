#include "policy/text.hpp"

namespace keyshim::policy::detail {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::optional<std::string_view> header_value(const std::vector<Header>& headers, std::string_view name) {
  for (const Header& header : headers) {
    if (iequals(trim(header.name), name)) {
      return trim(header.value);
    }
  }
  return std::nullopt;
}

} // namespace keyshim::policy::detail
