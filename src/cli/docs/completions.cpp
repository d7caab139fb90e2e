#include "cli/docs/completions.hpp"

#include <algorithm>

namespace keyshim::cli::docs {

std::string sh_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string short_description(std::string_view description) {
  constexpr std::size_t k_longest = 80;
  std::size_t end = std::min(description.find(';'), description.find(" ("));
  std::string_view text = description.substr(0, end);
  if (text.size() > k_longest) {
    std::size_t space = text.rfind(' ', k_longest - 3);
    text = text.substr(0, space == std::string_view::npos ? k_longest - 3 : space);
    return std::string(text) + "...";
  }
  return std::string(text);
}

} // namespace keyshim::cli::docs
