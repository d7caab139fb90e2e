// max_concurrent and the per-key usage counts of one pool.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <limits>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;
using test::take;

std::vector<config::KeyConfig> limited(std::vector<int> limits) {
  std::vector<config::KeyConfig> keys;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    keys.push_back(test::make_key("k" + std::to_string(i)));
    keys.back().max_concurrent = limits[i];
  }
  return keys;
}

TEST(KeyPoolLimits, AKeyAtItsMaxConcurrentIsSkippedUntilASlotFrees) {
  test::FakeClock clock;
  KeyPool pool(limited({1, 2}), Strategy::ordered, clock);
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 1); // key 0 is busy
  EXPECT_EQ(take(pool), 1);
  Selection none = pool.acquire({});
  EXPECT_FALSE(none.index);
  EXPECT_TRUE(none.busy);
  EXPECT_FALSE(none.earliest_available);
  pool.release(0);
  EXPECT_EQ(take(pool), 0);
}

TEST(KeyPoolLimits, ZeroMeansUnlimited) {
  test::FakeClock clock;
  KeyPool pool(limited({0}), Strategy::ordered, clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(take(pool), 0);
  }
  EXPECT_EQ(pool.health(0).in_flight, 100);
}

TEST(KeyPoolLimits, ACoolingKeyIsNotBusy) {
  test::FakeClock clock;
  KeyPool pool(limited({1}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::cool(429, 30s, true, "429"));
  Selection none = pool.acquire({});
  EXPECT_FALSE(none.index);
  EXPECT_FALSE(none.busy);
  ASSERT_TRUE(none.earliest_available);
  EXPECT_EQ(*none.earliest_available, clock.now() + 30s);
}

TEST(KeyPoolLimits, AnExcludedBusyKeyDoesNotCountAsBusy) {
  test::FakeClock clock;
  KeyPool pool(limited({1}), Strategy::ordered, clock);
  ASSERT_EQ(take(pool), 0);
  EXPECT_FALSE(pool.acquire({true}).busy);
}

TEST(KeyPoolLimits, RoundRobinAndLeastRecentlyUsedRespectTheLimitToo) {
  for (Strategy strategy : {Strategy::round_robin, Strategy::least_recently_used}) {
    test::FakeClock clock;
    KeyPool pool(limited({1, 1}), strategy, clock);
    int first = take(pool);
    clock.advance(1s);
    int second = take(pool);
    EXPECT_NE(first, second) << to_string(strategy);
    EXPECT_EQ(take(pool), -1) << to_string(strategy);
  }
}

TEST(KeyPoolUsage, AttemptsFailuresTokensAndBytesAreCountedForTodayAndSinceStart) {
  test::FakeClock clock;
  KeyPool pool(make_keys({"a"}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::success(200));
  pool.report(0, nullptr, test::cool(429, 1s, true, "429"));
  pool.report(0, nullptr, test::failure(0, 0ms, "connect error"));
  pool.count_tokens(0, 120, 45);
  pool.count_tokens(0, 30, 5);
  pool.count_bytes(0, 1000);
  pool.count_bytes(0, 24);
  KeyHealth h = pool.health(0);
  for (const UsageCounts& usage : {h.today, h.total}) {
    EXPECT_EQ(usage.requests, 3u);
    EXPECT_EQ(usage.failures.at(static_cast<std::size_t>(FailureClass::rate_limit)), 1u);
    EXPECT_EQ(usage.failures.at(static_cast<std::size_t>(FailureClass::transport)), 1u);
    EXPECT_EQ(usage.failures.at(static_cast<std::size_t>(FailureClass::auth)), 0u);
    EXPECT_EQ(usage.input_tokens, 150u);
    EXPECT_EQ(usage.output_tokens, 50u);
    EXPECT_EQ(usage.bytes, 1024u);
  }
}

// 3 x 2^53 input tokens a response (within the usage meter's cap of 2^53
// per field): the 683rd such response used to wrap the count back to 9e15,
// which a monitor reads as a restart.
TEST(KeyPoolUsage, TokenAndByteCountsStopAtTheirCeilingInsteadOfWrapping) {
  test::FakeClock clock;
  KeyPool pool(make_keys({"a"}), Strategy::ordered, clock);
  constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();
  constexpr std::uint64_t k_response = 3 * (std::uint64_t{1} << 53);
  std::uint64_t previous = 0;
  for (int i = 0; i < 700; ++i) {
    pool.count_tokens(0, k_response, 1);
    std::uint64_t now = pool.health(0).total.input_tokens;
    ASSERT_GE(now, previous) << "response " << i + 1;
    previous = now;
  }
  pool.count_bytes(0, k_max - 1);
  pool.count_bytes(0, 2);
  KeyHealth h = pool.health(0);
  for (const UsageCounts& usage : {h.today, h.total}) {
    EXPECT_EQ(usage.input_tokens, k_max);
    EXPECT_EQ(usage.output_tokens, 700u);
    EXPECT_EQ(usage.bytes, k_max);
  }
}

// "Today" starts at local midnight: TZ (a POSIX rule, UTC+1, no tzdata
// needed) is set for this process only.
TEST(KeyPoolUsage, TodayStartsAgainAtLocalMidnightAndSinceStartDoesNot) {
  ::setenv("TZ", "<+01>-1", 1);
  ::tzset();
  test::FakeClock clock; // 2026-11-29T12:00:00Z is 13:00 local
  KeyPool pool(make_keys({"a"}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::success(200));
  pool.count_tokens(0, 10, 20);
  clock.advance(10h + 59min); // 23:59 local
  pool.report(0, nullptr, test::success(200));
  EXPECT_EQ(pool.health(0).today.requests, 2u);
  clock.advance(1min); // local midnight, 23:00 UTC
  KeyHealth h = pool.health(0);
  EXPECT_EQ(h.today.requests, 0u);
  EXPECT_EQ(h.today.input_tokens, 0u);
  EXPECT_EQ(h.total.requests, 2u);
  EXPECT_EQ(h.total.input_tokens, 10u);
  ::unsetenv("TZ");
  ::tzset();
}

// The local day is remembered between requests (localtime_r runs once per
// day, not per request); a clock set back to the day before leaves it too.
TEST(KeyPoolUsage, TodayFollowsAClockSetBackToTheDayBefore) {
  ::setenv("TZ", "<+01>-1", 1);
  ::tzset();
  test::FakeClock clock; // 13:00 local
  KeyPool pool(make_keys({"a"}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::success(200));
  clock.advance(12h); // 01:00 local, the next day
  pool.report(0, nullptr, test::success(200));
  pool.report(0, nullptr, test::success(200));
  EXPECT_EQ(pool.health(0).today.requests, 2u);
  clock.advance(-3h); // 22:00 local, the day before again
  EXPECT_EQ(pool.health(0).today.requests, 0u);
  pool.report(0, nullptr, test::success(200));
  EXPECT_EQ(pool.health(0).today.requests, 1u);
  EXPECT_EQ(pool.health(0).total.requests, 4u);
  ::unsetenv("TZ");
  ::tzset();
}

TEST(KeyPoolUsage, UsageCarriesAcrossAReloadThatKeepsTheKey) {
  test::FakeClock clock;
  KeyPool pool(make_keys({"a"}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  pool.count_tokens(0, 7, 8);
  std::shared_ptr<KeyPool> next = KeyPool::reloaded(pool, make_keys({"new", "a"}), Strategy::ordered);
  EXPECT_EQ(next->health(1).total.requests, 1u);
  EXPECT_EQ(next->health(1).total.output_tokens, 8u);
  EXPECT_EQ(next->health(0).total.requests, 0u);
}

} // namespace
} // namespace keyshim::pool
