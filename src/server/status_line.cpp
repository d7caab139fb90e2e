#include "server/status_line.hpp"

#include <fmt/format.h>

namespace keyshim::server {

std::string status_line(const relay::PoolState& state) {
  if (!state.config) {
    // The problem names the file and what is wrong with it, never a key; its
    // first line is enough here, the log has the rest.
    std::string problem = state.problem.substr(0, state.problem.find('\n'));
    return fmt::format("serving 503s: {}", problem);
  }
  pool::Counts total;
  std::string empty_pools;
  for (const relay::ServedPool& served : state.pools) {
    pool::Counts counts = served.keys->counts();
    total.total += counts.total;
    total.available += counts.available;
    total.cooling += counts.cooling;
    total.disabled += counts.disabled;
    if (counts.available == 0) {
      empty_pools += (empty_pools.empty() ? "" : ", ") + served.config->name;
    }
  }
  std::string line = fmt::format("{} key{}", total.total, total.total == 1 ? "" : "s");
  if (state.pools.size() > 1) {
    line += fmt::format(" in {} pools", state.pools.size());
  }
  line += fmt::format(": {} available", total.available);
  if (total.cooling > 0) {
    line += fmt::format(", {} cooling", total.cooling);
  }
  if (total.disabled > 0) {
    line += fmt::format(", {} disabled", total.disabled);
  }
  if (state.pools.size() > 1 && !empty_pools.empty()) {
    line += fmt::format("; none available in {}", empty_pools);
  }
  return line;
}

} // namespace keyshim::server
