// The rate limits a key's provider reports: kept per key, a spent one sets
// the key (or its model) aside until the reset without blame, and
// round-robin and least-recently-used prefer keys with headroom
// (docs/behaviour.md §4.1).
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

QuotaFigures figures(std::uint64_t limit, std::uint64_t remaining, std::optional<util::TimePoint> reset) {
  return QuotaFigures{limit, remaining, reset};
}

class KeyPoolQuotaTest : public ::testing::Test {
protected:
  KeyPool make_pool(Strategy strategy, std::vector<std::string> labels = {"a", "b", "c"}) {
    return KeyPool(make_keys(labels), strategy, m_clock);
  }
  // A success whose response reported `requests` figures and, when
  // `set_aside` > 0, spent them.
  Report served(QuotaFigures requests, std::chrono::milliseconds set_aside = 0ms) {
    Report report = test::success(200);
    QuotaReport quota;
    quota.quota.kinds.at(static_cast<std::size_t>(QuotaKind::requests)) = requests;
    quota.quota.reported = m_clock.now();
    quota.set_aside = set_aside;
    quota.reason = set_aside > 0ms ? "quota: 0 requests left" : "";
    report.quota = quota;
    return report;
  }
  // `index` reported `share` of 100 requests left, resetting in a minute.
  void left(KeyPool& pool, std::size_t index, std::uint64_t share) {
    pool.report(index, nullptr, served(figures(100, share, m_clock.now() + 1min)));
  }

  test::FakeClock m_clock;
  const std::string m_model = "gpt-4o";
};

TEST_F(KeyPoolQuotaTest, TheLastReportedFiguresAreKeptPerKey) {
  KeyPool pool = make_pool(Strategy::ordered);
  EXPECT_FALSE(pool.health(0).quota);
  left(pool, 0, 40);
  left(pool, 0, 39);
  pool.report(0, nullptr, test::success(200)); // a response without figures keeps the last ones
  std::optional<KeyQuota> quota = pool.health(0).quota;
  ASSERT_TRUE(quota);
  const QuotaFigures& requests = quota->kinds.at(static_cast<std::size_t>(QuotaKind::requests));
  EXPECT_EQ(requests.limit, 100u);
  EXPECT_EQ(requests.remaining, 39u);
  EXPECT_EQ(requests.reset, m_clock.now() + 1min);
  EXPECT_FALSE(pool.health(1).quota);
}

TEST_F(KeyPoolQuotaTest, ASpentKeyIsSetAsideUntilItsResetWithoutBlame) {
  KeyPool pool = make_pool(Strategy::ordered);
  EXPECT_EQ(take(pool), 0);
  pool.report(0, nullptr, served(figures(100, 0, m_clock.now() + 3s), 3s));
  pool.release(0);
  EXPECT_EQ(take(pool), 1) << "set aside: the next request goes to the next key";
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_EQ(health.until, m_clock.now() + 3s);
  EXPECT_EQ(health.reason, "quota: 0 requests left");
  EXPECT_EQ(health.error_count, 0u);
  EXPECT_EQ(health.ok_count, 1u);
  EXPECT_EQ(pool.streaks(0).failures, 0);
  EXPECT_EQ(pool.streaks(0).rate_limits, 0);
  m_clock.advance(3s);
  EXPECT_EQ(take(pool), 0) << "back once the limit resets";
}

TEST_F(KeyPoolQuotaTest, TheEndOfASetAsideIsWhenTheKeyIsAvailable) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  pool.report(0, nullptr, served(figures(100, 0, m_clock.now() + 8s), 8s));
  pool.report(1, nullptr, served(figures(100, 0, m_clock.now() + 5s), 5s));
  Selection none = pool.acquire({});
  EXPECT_FALSE(none.index);
  EXPECT_EQ(none.earliest_available, m_clock.now() + 5s);
  EXPECT_EQ(pool.earliest_available(), m_clock.now() + 5s);
}

TEST_F(KeyPoolQuotaTest, AModelsSpentLimitSetsAsideOnlyThePair) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  pool.report(0, &m_model, served(figures(100, 0, m_clock.now() + 4s), 4s));
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_TRUE(pool.cooling_for(0, &m_model));
  Selection other = pool.acquire({}, &m_model);
  EXPECT_EQ(other.index, 1u);
  pool.release(1);
  const std::string another = "gpt-4o-mini";
  EXPECT_EQ(pool.acquire({}, &another).index, 0u) << "the key serves other models";
  pool.release(0);
  EXPECT_EQ(pool.earliest_available(&m_model), m_clock.now() + 4s);
  EXPECT_EQ(pool.earliest_available(), std::nullopt) << "nothing cools the key itself";
}

TEST_F(KeyPoolQuotaTest, ASetAsideNeverShortensALongerCooldownNorWakesADisabledKey) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  pool.report(0, nullptr, test::cool(429, 60s, false, "429 Retry-After"));
  pool.report(0, nullptr, served(figures(100, 0, m_clock.now() + 2s), 2s));
  EXPECT_EQ(pool.health(0).until, m_clock.now() + 60s);
  EXPECT_EQ(pool.health(0).reason, "429 Retry-After");
  pool.report(1, nullptr, test::disable(401, "401"));
  pool.report(1, nullptr, served(figures(100, 0, m_clock.now() + 2s), 2s));
  EXPECT_EQ(pool.health(1).state, KeyState::disabled);
}

TEST_F(KeyPoolQuotaTest, ASetAsideNamingTheSameResetAsA429KeepsThe429sReason) {
  KeyPool pool = make_pool(Strategy::ordered, {"a", "b"});
  Report report = test::cool(429, 119'990ms, false, "429 anthropic-ratelimit-requests-reset");
  report.quota = served(figures(100, 0, m_clock.now() + 120s), 120s).quota;
  pool.report(0, nullptr, report);
  EXPECT_EQ(pool.health(0).reason, "429 anthropic-ratelimit-requests-reset");
  pool.report(0, nullptr, served(figures(100, 0, m_clock.now() + 5min), 5min));
  EXPECT_EQ(pool.health(0).until, m_clock.now() + 5min) << "a set-aside that ends later still extends it";
  EXPECT_EQ(pool.health(0).reason, "quota: 0 requests left");
}

TEST_F(KeyPoolQuotaTest, RoundRobinPrefersKeysWithHeadroom) {
  KeyPool pool = make_pool(Strategy::round_robin);
  left(pool, 0, 5);  // below a tenth
  left(pool, 1, 30); // a quarter or more
  // c reported nothing: as good as plenty
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    order.push_back(take(pool));
  }
  EXPECT_EQ(order, (std::vector<int>{2, 2, 2}));
  left(pool, 2, 20); // below a quarter, above a tenth
  EXPECT_EQ(take(pool), 1);
  EXPECT_EQ(take(pool, {false, true}), 2);
  EXPECT_EQ(take(pool, {false, true, true}), 0) << "a low key still serves when nothing better is free";
}

TEST_F(KeyPoolQuotaTest, RoundRobinStillSpreadsAmongKeysWithPlentyLeft) {
  KeyPool pool = make_pool(Strategy::round_robin);
  left(pool, 0, 90);
  left(pool, 1, 55);
  std::vector<int> order;
  for (int i = 0; i < 6; ++i) {
    order.push_back(take(pool));
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST_F(KeyPoolQuotaTest, LeastRecentlyUsedPrefersHeadroomThenTheOldestUse) {
  KeyPool pool = make_pool(Strategy::least_recently_used);
  EXPECT_EQ(take(pool), 0);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 1);
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 2);
  m_clock.advance(1s);
  left(pool, 0, 8);
  EXPECT_EQ(take(pool), 1) << "a, the oldest, is low on requests";
  m_clock.advance(1s);
  EXPECT_EQ(take(pool), 2);
}

TEST_F(KeyPoolQuotaTest, OrderedIgnoresHeadroom) {
  KeyPool pool = make_pool(Strategy::ordered);
  left(pool, 0, 1);
  EXPECT_EQ(take(pool), 0);
}

TEST_F(KeyPoolQuotaTest, FiguresPastTheirResetCountAsWhole) {
  KeyPool pool = make_pool(Strategy::round_robin, {"a", "b"});
  left(pool, 0, 1);
  EXPECT_EQ(take(pool), 1);
  m_clock.advance(1min);
  EXPECT_EQ(take(pool), 0) << "the limit reset: the cursor's turn again";
}

TEST(KeyQuota, HeadroomIsTheSmallestShareLeft) {
  test::FakeClock clock;
  util::TimePoint now = clock.now();
  KeyQuota quota;
  quota.reported = now;
  EXPECT_FALSE(headroom(quota, now));
  EXPECT_EQ(headroom_tier(quota, now), 0);
  quota.kinds.at(0) = figures(200, 150, now + 10s);
  quota.kinds.at(1) = figures(1000, 300, now + 20s);
  EXPECT_DOUBLE_EQ(*headroom(quota, now), 0.3);
  EXPECT_EQ(headroom_tier(quota, now), 1);
  EXPECT_DOUBLE_EQ(*headroom(quota, now + 10s), 0.3);
  EXPECT_DOUBLE_EQ(*headroom(quota, now + 20s), 1.0) << "both limits reset";
  quota.kinds.at(1) = figures(1000, 5000, now + 20s);
  EXPECT_DOUBLE_EQ(*headroom(quota, now), 0.75) << "more remaining than the limit counts as the limit";
  quota.kinds.at(1) = figures(0, 0, now + 20s);
  EXPECT_DOUBLE_EQ(*headroom(quota, now), 0.75) << "a limit of 0 tells nothing";
  quota.kinds.at(2) = QuotaFigures{std::nullopt, 0, now + 20s};
  EXPECT_DOUBLE_EQ(*headroom(quota, now), 0.75) << "a remaining without its limit is no share";
}

TEST(KeyQuota, TiersByHalfQuarterAndTenth) {
  test::FakeClock clock;
  util::TimePoint now = clock.now();
  KeyQuota quota;
  quota.reported = now;
  std::vector<std::pair<std::uint64_t, int>> cases = {{100, 0}, {50, 0}, {49, 1}, {25, 1},
                                                      {24, 2},  {10, 2}, {9, 3},  {0, 3}};
  for (auto [remaining, tier] : cases) {
    quota.kinds.at(0) = figures(100, remaining, now + 1s);
    EXPECT_EQ(headroom_tier(quota, now), tier) << remaining;
  }
}

TEST(KeyQuota, AFigureWithoutAResetCountsForAMinute) {
  test::FakeClock clock;
  util::TimePoint now = clock.now();
  KeyQuota quota;
  quota.reported = now;
  quota.kinds.at(0) = figures(100, 5, std::nullopt);
  EXPECT_EQ(headroom_tier(quota, now + 59s), 3);
  EXPECT_EQ(headroom_tier(quota, now + 60s), 0);
}

TEST(KeyQuota, NamesItsKinds) {
  EXPECT_STREQ(to_string(QuotaKind::requests), "requests");
  EXPECT_STREQ(to_string(QuotaKind::tokens), "tokens");
  EXPECT_STREQ(to_string(QuotaKind::input_tokens), "input_tokens");
  EXPECT_STREQ(to_string(QuotaKind::output_tokens), "output_tokens");
  EXPECT_STREQ(to_string(QuotaKind::unified), "unified");
}

} // namespace
} // namespace keyshim::pool
