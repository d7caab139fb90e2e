// Limits of one's own in a pool: a key at one is skipped until its window
// ends, says when it is back, and shows its use.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;
using config::Strategy;
using test::take;

// The fake clock starts at 2026-11-29T12:00:00Z: this minute ends at 12:01.
const util::TimePoint k_minute_end = sys_days{year{2026} / November / 29} + 12h + 1min;

// Keys "a" with `limits` and "b" without.
std::vector<config::KeyConfig> limited_and_free(const config::Limits& limits) {
  std::vector<config::KeyConfig> keys = test::make_keys({"a", "b"});
  keys[0].limits = limits;
  return keys;
}

config::Limits requests_per_minute(std::uint64_t n) {
  config::Limits limits;
  limits.requests_per_minute = n;
  return limits;
}

TEST(KeyPoolOwnLimits, AKeyAtItsRequestsPerMinuteIsSkippedUntilTheMinuteEnds) {
  test::FakeClock clock;
  KeyPool pool(limited_and_free(requests_per_minute(2)), Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 1);
  EXPECT_EQ(take(pool), 1);
  clock.advance(59s);
  EXPECT_EQ(take(pool), 1);
  clock.advance(1s); // 12:01: a new minute
  EXPECT_EQ(take(pool), 0);
}

// The relay logs the moment a key reaches a limit, once: the selection or
// the token count that took it there says so.
TEST(KeyPoolOwnLimits, TheRequestOrResponseThatReachesALimitSaysSoOnce) {
  test::FakeClock clock;
  config::Limits limits = requests_per_minute(2);
  limits.tokens_per_minute = 100;
  KeyPool pool(limited_and_free(limits), Strategy::ordered, clock);
  EXPECT_FALSE(pool.acquire({}).reached_limit);
  EXPECT_FALSE(pool.count_tokens(0, 50, 49));
  EXPECT_TRUE(pool.count_tokens(0, 1, 0));
  EXPECT_FALSE(pool.count_tokens(0, 10, 10)); // already there
  clock.advance(1min);
  EXPECT_FALSE(pool.acquire({}).reached_limit);
  Selection second = pool.acquire({});
  EXPECT_EQ(second.index, 0u);
  EXPECT_TRUE(second.reached_limit);
  EXPECT_FALSE(pool.acquire({}).reached_limit); // key b, which has no limits
  EXPECT_FALSE(pool.count_tokens(1, 1000, 1000));
}

TEST(KeyPoolOwnLimits, EveryAttemptCountsEvenWhenItFails) {
  test::FakeClock clock;
  KeyPool pool(limited_and_free(requests_per_minute(2)), Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  pool.release(0);
  EXPECT_EQ(take(pool), 0);
  pool.release(0);
  EXPECT_EQ(take(pool), 1);
}

TEST(KeyPoolOwnLimits, WithEveryKeyAtItsLimitTheSelectionSaysWhenTheWindowEnds) {
  test::FakeClock clock;
  std::vector<config::KeyConfig> keys = test::make_keys({"a"});
  keys[0].limits = requests_per_minute(1);
  KeyPool pool(keys, Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  Selection none = pool.acquire({});
  EXPECT_FALSE(none.index);
  EXPECT_TRUE(none.over_limits);
  EXPECT_FALSE(none.busy);
  EXPECT_EQ(none.earliest_available, k_minute_end);
  EXPECT_EQ(pool.earliest_available(), k_minute_end);
}

TEST(KeyPoolOwnLimits, ACoolingThatEndsLaterThanTheWindowDecidesWhenTheKeyIsBack) {
  test::FakeClock clock;
  std::vector<config::KeyConfig> keys = test::make_keys({"a", "b"});
  keys[0].limits = requests_per_minute(1);
  keys[1].limits = requests_per_minute(1);
  KeyPool pool(keys, Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 1);
  pool.report(0, nullptr, test::cool(429, 5min, false, "429"));
  pool.report(1, nullptr, test::disable(401, "401"));
  // a: at its limit until 12:01, cooling until 12:05; b: disabled (never back).
  EXPECT_EQ(pool.earliest_available(), clock.now() + 5min);
}

TEST(KeyPoolOwnLimits, TokensPerDayCountWhatResponsesReport) {
  test::FakeClock clock;
  config::Limits limits;
  limits.tokens_per_day = 100;
  limits.day_zone = config::DayZone{false, 0};
  KeyPool pool(limited_and_free(limits), Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  pool.count_tokens(0, 60, 39);
  EXPECT_EQ(take(pool), 0);
  pool.count_tokens(0, 1, 0);
  EXPECT_EQ(take(pool), 1);
  clock.advance(12h); // midnight UTC
  EXPECT_EQ(take(pool), 0);
}

TEST(KeyPoolOwnLimits, AKeyAtItsLimitReadsAsCoolingWithItsUse) {
  test::FakeClock clock;
  KeyPool pool(limited_and_free(requests_per_minute(2)), Strategy::ordered, clock);
  take(pool);
  take(pool);
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_EQ(health.until, k_minute_end);
  EXPECT_EQ(health.reason, "own limit: requests 2/2 per minute");
  EXPECT_EQ(pool.counts().cooling, 1);
  EXPECT_EQ(pool.counts().available, 1);
  std::vector<KeySnapshot> snapshot = pool.snapshot();
  ASSERT_EQ(snapshot[0].limits.size(), 1u);
  EXPECT_EQ(snapshot[0].limits[0].used, 2u);
  EXPECT_EQ(snapshot[0].limits[0].limit, 2u);
  EXPECT_EQ(snapshot[0].limits[0].resets, k_minute_end);
  EXPECT_TRUE(snapshot[1].limits.empty());
  clock.advance(1min);
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_EQ(pool.health(0).reason, "");
}

TEST(KeyPoolOwnLimits, UseCarriesAcrossAReloadThatKeepsTheKey) {
  test::FakeClock clock;
  KeyPool pool(limited_and_free(requests_per_minute(3)), Strategy::ordered, clock);
  take(pool);
  take(pool);
  // The reload lowers the limit to 2: the two requests made reach it.
  std::shared_ptr<KeyPool> next =
      KeyPool::reloaded(pool, limited_and_free(requests_per_minute(2)), Strategy::ordered);
  EXPECT_EQ(take(*next), 1);
}

} // namespace
} // namespace keyshim::pool
