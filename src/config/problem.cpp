#include "config/loader.hpp"

#include <fmt/format.h>

namespace keyshim::config {

std::string Problem::text() const {
  if (line > 0) {
    return fmt::format("{}:{}:{}: {}", file, line, column, message);
  }
  return fmt::format("{}: {}", file, message);
}

std::string LoadResult::problems_text() const {
  std::string out;
  for (const Problem& problem : problems) {
    out += problem.text();
    out += '\n';
  }
  return out;
}

} // namespace keyshim::config
