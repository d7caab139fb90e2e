#include "pool/quota.hpp"

#include <algorithm>

namespace keyshim::pool {
namespace {

// Providers always send a reset with their figures; a figure without one
// says nothing about the key a minute later.
constexpr auto k_figure_without_reset = std::chrono::minutes(1);

} // namespace

std::optional<double> headroom(const KeyQuota& quota, util::TimePoint now) {
  std::optional<double> least;
  for (const QuotaFigures& figures : quota.kinds) {
    if (!figures.limit || !figures.remaining || *figures.limit == 0) {
      continue;
    }
    bool current = figures.reset ? now < *figures.reset : now < quota.reported + k_figure_without_reset;
    double share = current ? static_cast<double>(std::min(*figures.remaining, *figures.limit)) /
                                 static_cast<double>(*figures.limit)
                           : 1.0;
    least = std::min(least.value_or(1.0), share);
  }
  return least;
}

int headroom_tier(const KeyQuota& quota, util::TimePoint now) {
  double share = headroom(quota, now).value_or(1.0);
  if (share >= 0.5) {
    return 0;
  }
  if (share >= 0.25) {
    return 1;
  }
  return share >= 0.1 ? 2 : 3;
}

} // namespace keyshim::pool
