#pragma once
// The rate limits a key's provider last reported, as the pool keeps them
// (the relay copies them from policy's reading of a response head), and the
// headroom they leave for choosing among keys (docs/behaviour.md §4.1).
#include "util/clock.hpp"
#include "util/quota_figures.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace keyshim::pool {

using util::k_quota_kinds;
using util::QuotaFigures;
using util::QuotaKind;
using util::to_string;

// The figures of the key's last response that carried any, by QuotaKind.
struct KeyQuota {
  std::array<QuotaFigures, k_quota_kinds> kinds{};
  util::TimePoint reported{}; // when that response arrived
};

// What one response said about the key's limits.
struct QuotaReport {
  KeyQuota quota;
  // > 0 when a limit has nothing left: the key (or the request's model on
  // it) rests this long, a cooling that is neither a failure nor a streak.
  std::chrono::milliseconds set_aside{0};
  std::string reason; // of the set-aside: "quota: 0 requests left"
};

// The smallest share left of any reported limit (remaining / limit, at most
// 1) as of `now`. A limit past its reset is whole again; a figure without a
// reset counts for a minute after it was reported. nullopt when no limit
// tells.
std::optional<double> headroom(const KeyQuota& quota, util::TimePoint now);

// How far back round-robin and least-recently-used put the key: 0 with half
// or more of every limit left (or nothing known), 1 with a quarter or more,
// 2 with a tenth or more, 3 below a tenth.
int headroom_tier(const KeyQuota& quota, util::TimePoint now);

} // namespace keyshim::pool
