#pragma once
// The vocabulary of the rate limits providers report on every response
// (docs/behaviour.md §4.1): policy reads them from a response head, the pool
// keeps a key's last ones, and both speak of them in these types.
#include "util/clock.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace keyshim::util {

enum class QuotaKind { requests, tokens, input_tokens, output_tokens, unified };
inline constexpr std::size_t k_quota_kinds = 5;
// "requests", "tokens", "input_tokens", "output_tokens", "unified".
const char* to_string(QuotaKind kind);

// One limit as a response reported it; a figure the response did not give
// (or gave in a form refused as garbage) is nullopt.
struct QuotaFigures {
  std::optional<std::uint64_t> limit;
  std::optional<std::uint64_t> remaining;
  std::optional<TimePoint> reset; // when the limit is whole again

  bool operator==(const QuotaFigures&) const = default;
};

} // namespace keyshim::util
