// A key named by the request (keyshim-key, docs/behaviour.md §4.2) and the
// usage of replays, counted apart from the key's today and total.
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

class KeyPoolPinned : public ::testing::Test {
protected:
  test::FakeClock m_clock;
};

TEST_F(KeyPoolPinned, APinnedKeyIsTakenWhileCoolingOrDisabledAndCountedInFlight) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::ordered, m_clock);
  pool.report(0, nullptr, test::cool(429, 30s, false, "429"));
  pool.report(1, nullptr, test::disable(401, "401"));
  EXPECT_EQ(take(pool), -1);
  Selection cooling = pool.acquire_pinned(0);
  ASSERT_TRUE(cooling.index);
  EXPECT_EQ(*cooling.index, 0u);
  EXPECT_EQ(cooling.key_id, pool.key_id(0));
  EXPECT_FALSE(cooling.probe);
  Selection disabled = pool.acquire_pinned(1);
  ASSERT_TRUE(disabled.index);
  EXPECT_EQ(*disabled.index, 1u);
  EXPECT_EQ(pool.health(0).in_flight, 1);
  EXPECT_EQ(pool.health(1).in_flight, 1);
  // Taking it changed nothing of its state.
  EXPECT_EQ(pool.health(0).state, KeyState::cooling);
  EXPECT_EQ(pool.health(1).state, KeyState::disabled);
  pool.release(0);
  pool.release(1);
  EXPECT_EQ(pool.health(0).in_flight, 0);
}

TEST_F(KeyPoolPinned, APinnedKeyIgnoresMaxConcurrentAndLeavesTheCursor) {
  std::vector<config::KeyConfig> keys = make_keys({"a", "b"});
  keys[1].max_concurrent = 1;
  KeyPool pool(std::move(keys), Strategy::round_robin, m_clock);
  ASSERT_TRUE(pool.acquire_pinned(1).index);
  ASSERT_TRUE(pool.acquire_pinned(1).index);
  EXPECT_EQ(pool.health(1).in_flight, 2);
  EXPECT_EQ(take(pool), 0) << "the round-robin cursor did not move";
}

TEST_F(KeyPoolPinned, LabelsFindTheirKey) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::ordered, m_clock);
  EXPECT_EQ(pool.index_of_label("b"), 1u);
  EXPECT_EQ(pool.index_of_label("B"), std::nullopt);
  EXPECT_EQ(pool.index_of_label(""), std::nullopt);
}

TEST_F(KeyPoolPinned, AReplaysAttemptsTokensAndBytesCountApart) {
  KeyPool pool(make_keys({"a"}), Strategy::ordered, m_clock);
  pool.report(0, nullptr, test::success(200));
  pool.count_tokens(0, 10, 5);
  pool.count_bytes(0, 100);
  Report replay = test::cool(429, 30s, false, "429");
  replay.replay = true;
  pool.report(0, nullptr, replay);
  pool.count_tokens(0, 7, 3, true);
  pool.count_bytes(0, 40, true);
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.today.requests, 1u);
  EXPECT_EQ(health.total.requests, 1u);
  EXPECT_EQ(health.total.input_tokens, 10u);
  EXPECT_EQ(health.total.bytes, 100u);
  EXPECT_EQ(health.replays.requests, 1u);
  EXPECT_EQ(health.replays.failures.at(static_cast<std::size_t>(FailureClass::rate_limit)), 1u);
  EXPECT_EQ(health.replays.input_tokens, 7u);
  EXPECT_EQ(health.replays.output_tokens, 3u);
  EXPECT_EQ(health.replays.bytes, 40u);
  // Its outcome is the key's health all the same.
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_EQ(health.error_count, 1u);
}

TEST_F(KeyPoolPinned, APinnedRequestCountsAgainstTheKeysOwnLimits) {
  std::vector<config::KeyConfig> keys = make_keys({"a"});
  keys[0].limits.requests_per_minute = 1;
  KeyPool pool(std::move(keys), Strategy::ordered, m_clock);
  Selection first = pool.acquire_pinned(0);
  EXPECT_TRUE(first.reached_limit);
  pool.release(0);
  EXPECT_EQ(take(pool), -1) << "the limit it reached holds for other requests";
  Selection again = pool.acquire_pinned(0);
  EXPECT_TRUE(again.index) << "a pinned request passes its own limit";
  EXPECT_FALSE(again.reached_limit) << "reached before, not by this request";
}

} // namespace
} // namespace keyshim::pool
