// Selection strategies, health transitions and counts of a single pool.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;
using test::take;

class KeyPoolTest : public ::testing::Test {
protected:
  KeyPool make_pool(Strategy strategy, std::vector<std::string> labels = {"a", "b", "c"}) {
    return KeyPool(make_keys(labels), strategy, m_clock);
  }

  test::FakeClock m_clock;
};

TEST_F(KeyPoolTest, OrderedTakesTheFirstEligibleKeyInFileOrder) {
  KeyPool pool = make_pool(Strategy::ordered);
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 0);
  pool.report(0, nullptr, test::cool(429, 30s, false, "429"));
  EXPECT_EQ(take(pool), 1);
  pool.report(1, nullptr, test::disable(401, "401"));
  EXPECT_EQ(take(pool), 2);
}

TEST_F(KeyPoolTest, ExcludedKeysAreSkipped) {
  KeyPool pool = make_pool(Strategy::ordered);
  EXPECT_EQ(take(pool, {true}), 1);
  EXPECT_EQ(take(pool, {true, true}), 2);
  EXPECT_EQ(take(pool, {false, true, true}), 0);
  Selection none = pool.acquire({true, true, true});
  EXPECT_FALSE(none.index);
  EXPECT_FALSE(none.earliest_available); // nothing is cooling
}

TEST_F(KeyPoolTest, RoundRobinCyclesThroughKeys) {
  KeyPool pool = make_pool(Strategy::round_robin);
  std::vector<int> order;
  for (int i = 0; i < 7; ++i) {
    order.push_back(take(pool));
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
}

TEST_F(KeyPoolTest, RoundRobinSkipsIneligibleKeysAndContinuesAfterTheChosenOne) {
  KeyPool pool = make_pool(Strategy::round_robin, {"a", "b", "c", "d"});
  pool.report(1, nullptr, test::cool(429, 1min, false, "429"));
  EXPECT_EQ(take(pool), 0);
  EXPECT_EQ(take(pool), 2);
  EXPECT_EQ(take(pool, {false, false, false, true}), 0);
  EXPECT_EQ(take(pool), 2);
  EXPECT_EQ(take(pool), 3);
}

TEST_F(KeyPoolTest, LeastRecentlyUsedPicksTheOldestLastUse) {
  KeyPool pool = make_pool(Strategy::least_recently_used);
  // Never used: ties go by file order.
  EXPECT_EQ(take(pool), 0);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 1);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 2);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 0);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool, {false, true}), 2);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 1);
}

TEST_F(KeyPoolTest, LeastRecentlyUsedSkipsCoolingKeys) {
  KeyPool pool = make_pool(Strategy::least_recently_used);
  pool.report(0, nullptr, test::cool(429, 10s, false, "429"));
  EXPECT_EQ(take(pool), 1);
  EXPECT_EQ(take(pool), 2);
}

TEST_F(KeyPoolTest, AcquireStampsLastUseAndCountsInFlight) {
  KeyPool pool = make_pool(Strategy::ordered);
  m_clock.advance(5s);
  ASSERT_EQ(take(pool), 0);
  ASSERT_EQ(take(pool), 0);
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.in_flight, 2);
  EXPECT_EQ(health.last_used, m_clock.now());
  pool.release(0);
  pool.release(0);
  pool.release(0); // an extra release never goes negative
  EXPECT_EQ(pool.health(0).in_flight, 0);
}

TEST_F(KeyPoolTest, CoolingKeyIsEligibleAgainOnceItsCooldownEnds) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  pool.report(0, nullptr, test::cool(429, 30s, false, "429 Retry-After"));
  EXPECT_EQ(pool.health(0).state, KeyState::cooling);
  EXPECT_EQ(pool.health(0).until, m_clock.now() + 30s);
  EXPECT_EQ(pool.health(0).reason, "429 Retry-After");
  m_clock.advance(29s);
  EXPECT_EQ(take(pool), 1);
  m_clock.advance(1s);
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_EQ(pool.health(0).reason, "");
  EXPECT_EQ(take(pool), 0);
}

// A clock that, once armed, moves on by `step` at each reading after the first.
class SteppingClock final : public util::Clock {
public:
  util::TimePoint now() const override {
    util::TimePoint t = m_now;
    if (m_armed) {
      m_now += m_step;
    }
    return t;
  }
  void arm(util::TimePoint::duration step) {
    m_step = step;
    m_armed = true;
  }

private:
  mutable util::TimePoint m_now = util::TimePoint(std::chrono::hours(24 * 365 * 56));
  util::TimePoint::duration m_step{};
  bool m_armed = false;
};

TEST(KeyPoolTime, AKeyCoolingWhenTheSearchBeganNamesItsEndThoughItEndsBeforeTheAnswer) {
  SteppingClock clock;
  KeyPool pool(test::make_keys({"a"}), Strategy::ordered, clock);
  pool.report(0, nullptr, test::cool(429, 1s, false, "429"));
  clock.arm(1s); // the cooldown ends between the search and anything read after it
  Selection none = pool.acquire({});
  ASSERT_FALSE(none.index);
  ASSERT_TRUE(none.earliest_available) << "no key and no end: a waiter would get 503 'every key is disabled'";
}

TEST_F(KeyPoolTest, CooldownNeverShortensALongerOne) {
  KeyPool pool = make_pool(Strategy::ordered);
  util::TimePoint start = m_clock.now();
  pool.report(0, nullptr, test::cool(429, 10min, false, "429 Retry-After"));
  pool.report(0, nullptr, test::cool(403, 30s, false, "error event overloaded_error"));
  EXPECT_EQ(pool.health(0).until, start + 10min);
  EXPECT_EQ(pool.health(0).reason, "429 Retry-After");
  m_clock.advance(1min);
  pool.report(0, nullptr, test::cool(429, 20min, false, "429 retryDelay"));
  EXPECT_EQ(pool.health(0).until, start + 21min);
  EXPECT_EQ(pool.health(0).reason, "429 retryDelay");
}

TEST_F(KeyPoolTest, CooldownNeverWakesADisabledKey) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::disable(401, "401 unauthorized"));
  pool.report(0, nullptr, test::cool(429, 1s, false, "429"));
  pool.report(0, nullptr, test::failure(503, 30s, "503"));
  EXPECT_EQ(pool.health(0).state, KeyState::disabled);
  EXPECT_EQ(pool.health(0).reason, "401 unauthorized");
  m_clock.advance(24h);
  EXPECT_EQ(pool.health(0).state, KeyState::disabled);
  EXPECT_EQ(take(pool), 1);
}

TEST_F(KeyPoolTest, DisableOverridesCooling) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::cool(429, 1min, false, "429"));
  pool.report(0, nullptr, test::disable(402, "billing (402)"));
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.state, KeyState::disabled);
  EXPECT_EQ(health.reason, "billing (402)");
  EXPECT_EQ(health.last_status, 402);
}

TEST_F(KeyPoolTest, SuccessClearsBothStreaksAndCountsOk) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  pool.report(0, nullptr, test::failure(0, 0ms, "connect error"));
  pool.report(0, nullptr, test::cool(429, 1min, true, "429"));
  KeyHealth before = pool.health(0);
  EXPECT_EQ(before.consecutive_failures, 2);
  EXPECT_EQ(before.consecutive_rate_limits, 1);
  EXPECT_EQ(before.error_count, 3u);
  EXPECT_EQ(before.last_status, 429);
  pool.report(0, nullptr, test::success(200));
  KeyHealth after = pool.health(0);
  EXPECT_EQ(after.consecutive_failures, 0);
  EXPECT_EQ(after.consecutive_rate_limits, 0);
  EXPECT_EQ(after.ok_count, 1u);
  EXPECT_EQ(after.error_count, 3u);
  EXPECT_EQ(after.last_status, 200);
}

TEST_F(KeyPoolTest, HintedCooldownDoesNotExtendTheRateLimitStreak) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::cool(429, 5s, false, "429 Retry-After"));
  EXPECT_EQ(pool.health(0).consecutive_rate_limits, 0);
  pool.report(0, nullptr, test::cool(429, 60s, true, "429"));
  pool.report(0, nullptr, test::cool(429, 120s, true, "429"));
  EXPECT_EQ(pool.health(0).consecutive_rate_limits, 2);
}

TEST_F(KeyPoolTest, FailureBelowTheStreakDoesNotCool) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::failure(502, 0ms, "502"));
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_EQ(pool.health(0).consecutive_failures, 1);
  EXPECT_EQ(pool.health(0).last_status, 502);
  pool.report(0, nullptr, test::failure(502, 30s, "502"));
  EXPECT_EQ(pool.health(0).state, KeyState::cooling);
  EXPECT_EQ(pool.health(0).reason, "502");
  EXPECT_EQ(take(pool), 1);
}

TEST_F(KeyPoolTest, NeutralOnlyRecordsTheStatus) {
  KeyPool pool = make_pool(Strategy::ordered);
  pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  pool.report(0, nullptr, test::neutral(404));
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.last_status, 404);
  EXPECT_EQ(health.consecutive_failures, 1);
  EXPECT_EQ(health.error_count, 1u);
  EXPECT_EQ(health.ok_count, 0u);
  EXPECT_EQ(health.state, KeyState::available);
}

TEST_F(KeyPoolTest, NothingEligibleReportsTheEarliestCooldownEnd) {
  KeyPool pool = make_pool(Strategy::round_robin);
  pool.report(0, nullptr, test::cool(429, 5min, false, "429"));
  pool.report(1, nullptr, test::cool(429, 2min, false, "429"));
  pool.report(2, nullptr, test::disable(401, "401"));
  Selection selection = pool.acquire({});
  EXPECT_FALSE(selection.index);
  ASSERT_TRUE(selection.earliest_available);
  EXPECT_EQ(*selection.earliest_available, m_clock.now() + 2min);
  EXPECT_EQ(pool.earliest_available(), m_clock.now() + 2min);
  m_clock.advance(2min);
  EXPECT_EQ(take(pool), 1);
}

TEST_F(KeyPoolTest, AllDisabledHasNoEarliestAvailable) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  pool.report(0, nullptr, test::disable(401, "401"));
  pool.report(1, nullptr, test::disable(402, "billing (402)"));
  Selection selection = pool.acquire({});
  EXPECT_FALSE(selection.index);
  EXPECT_FALSE(selection.earliest_available);
  EXPECT_FALSE(pool.earliest_available());
}

TEST_F(KeyPoolTest, EmptyPoolSelectsNothing) {
  KeyPool pool(std::vector<config::KeyConfig>{}, Strategy::round_robin, m_clock);
  EXPECT_EQ(pool.size(), 0u);
  Selection selection = pool.acquire({});
  EXPECT_FALSE(selection.index);
  EXPECT_FALSE(selection.earliest_available);
  EXPECT_EQ(pool.counts().total, 0);
}

TEST_F(KeyPoolTest, CountsReadExpiredCoolingAsAvailable) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b", "c", "d"});
  pool.report(0, nullptr, test::cool(429, 10s, false, "429"));
  pool.report(1, nullptr, test::cool(429, 1h, false, "429"));
  pool.report(2, nullptr, test::disable(401, "401"));
  Counts counts = pool.counts();
  EXPECT_EQ(counts.total, 4);
  EXPECT_EQ(counts.available, 1);
  EXPECT_EQ(counts.cooling, 2);
  EXPECT_EQ(counts.disabled, 1);
  m_clock.advance(10s);
  counts = pool.counts();
  EXPECT_EQ(counts.available, 2);
  EXPECT_EQ(counts.cooling, 1);
}

TEST_F(KeyPoolTest, SnapshotShowsLabelsFingerprintsUpstreamAndHealth) {
  KeyPool pool = make_pool(Strategy::ordered, {"personal", "team"});
  pool.report(1, nullptr, test::cool(429, 30s, false, "429 Retry-After"));
  std::vector<KeySnapshot> snapshot = pool.snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].label, "personal");
  EXPECT_EQ(snapshot[0].fingerprint, pool.key(0).secret.fingerprint());
  EXPECT_EQ(snapshot[0].upstream, pool.key(0).base_url.text());
  EXPECT_EQ(snapshot[0].health.state, KeyState::available);
  EXPECT_EQ(snapshot[1].health.state, KeyState::cooling);
  EXPECT_EQ(snapshot[1].health.reason, "429 Retry-After");
  for (const KeySnapshot& key : snapshot) {
    EXPECT_EQ(key.fingerprint.find("0123456789"), std::string::npos) << "no key material";
  }
}

TEST_F(KeyPoolTest, SnapshotCarriesEachKeysMaxConcurrent) {
  std::vector<config::KeyConfig> keys = test::make_keys({"limited", "free"});
  keys[0].max_concurrent = 4;
  KeyPool pool(keys, Strategy::ordered, m_clock);
  std::vector<KeySnapshot> snapshot = pool.snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].max_concurrent, 4);
  EXPECT_EQ(snapshot[1].max_concurrent, 0);
}

TEST(KeyState, NamesItsStates) {
  EXPECT_STREQ(to_string(KeyState::available), "available");
  EXPECT_STREQ(to_string(KeyState::cooling), "cooling");
  EXPECT_STREQ(to_string(KeyState::disabled), "disabled");
}

} // namespace
} // namespace keyshim::pool
