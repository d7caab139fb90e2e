#pragma once
// Counters that stop at their ceiling. A usage counter that wrapped to a
// small number would read as a restart to every monitor (Prometheus resets
// a counter that goes down); one stuck at UINT64_MAX is at least honest.
#include <cstdint>
#include <limits>

namespace keyshim::util {

// counter += amount, or UINT64_MAX when the sum would not fit.
inline void add_saturating(std::uint64_t& counter, std::uint64_t amount) {
  constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();
  counter = amount > k_max - counter ? k_max : counter + amount;
}

} // namespace keyshim::util
