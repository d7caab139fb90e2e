// util::add_saturating: the one way every usage counter grows.
#include "util/saturating.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace keyshim::util {
namespace {

constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();

TEST(Saturating, AddsLikePlusBelowTheCeiling) {
  std::uint64_t counter = 40;
  add_saturating(counter, 2);
  EXPECT_EQ(counter, 42u);
  add_saturating(counter, 0);
  EXPECT_EQ(counter, 42u);
}

TEST(Saturating, StopsAtTheCeilingInsteadOfWrapping) {
  std::uint64_t counter = k_max - 1;
  add_saturating(counter, 1);
  EXPECT_EQ(counter, k_max);
  add_saturating(counter, 1);
  EXPECT_EQ(counter, k_max);
  std::uint64_t big = k_max / 2 + 1;
  add_saturating(big, k_max / 2 + 1);
  EXPECT_EQ(big, k_max);
}

} // namespace
} // namespace keyshim::util
