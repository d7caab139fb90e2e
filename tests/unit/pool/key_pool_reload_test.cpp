// Health carried across a SIGHUP reload, matched by key fingerprint.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_key;
using test::take;

class KeyPoolReloadTest : public ::testing::Test {
protected:
  test::FakeClock m_clock;
};

TEST_F(KeyPoolReloadTest, UnchangedKeysKeepTheirHealthAndNewKeysStartAvailable) {
  KeyPool old_pool({make_key("a"), make_key("b"), make_key("c")}, Strategy::ordered, m_clock);
  old_pool.report(0, nullptr, test::cool(429, 10min, false, "429 Retry-After"));
  old_pool.report(1, nullptr, test::disable(401, "401 unauthorized"));
  old_pool.report(2, nullptr, test::success(200));

  // Reordered, relabelled "a", "c" kept, "b" kept, "d" new.
  auto pool = KeyPool::reloaded(
      old_pool, {make_key("d"), make_key("b"), make_key("renamed", "sk-test-a-0123456789"), make_key("c")},
      Strategy::ordered);
  ASSERT_EQ(pool->size(), 4u);
  EXPECT_EQ(pool->health(0).state, KeyState::available);
  EXPECT_EQ(pool->health(0).ok_count, 0u);
  EXPECT_EQ(pool->health(1).state, KeyState::disabled);
  EXPECT_EQ(pool->health(1).reason, "401 unauthorized");
  EXPECT_EQ(pool->health(2).state, KeyState::cooling);
  EXPECT_EQ(pool->health(2).until, m_clock.now() + 10min);
  EXPECT_EQ(pool->key(2).label, "renamed");
  EXPECT_EQ(pool->health(3).ok_count, 1u);
}

TEST_F(KeyPoolReloadTest, ReloadedPoolUsesTheNewStrategy) {
  KeyPool old_pool({make_key("a"), make_key("b")}, Strategy::ordered, m_clock);
  auto pool = KeyPool::reloaded(old_pool, {make_key("a"), make_key("b")}, Strategy::round_robin);
  EXPECT_EQ(take(*pool), 0);
  EXPECT_EQ(take(*pool), 1);
  EXPECT_EQ(take(*pool), 0);
}

TEST_F(KeyPoolReloadTest, CoolingCarriedOverEndsOnTime) {
  KeyPool old_pool({make_key("a"), make_key("b")}, Strategy::ordered, m_clock);
  old_pool.report(0, nullptr, test::cool(429, 30s, false, "429"));
  auto pool = KeyPool::reloaded(old_pool, {make_key("a"), make_key("b")}, Strategy::ordered);
  EXPECT_EQ(take(*pool), 1);
  m_clock.advance(30s);
  EXPECT_EQ(take(*pool), 0);
}

TEST_F(KeyPoolReloadTest, InFlightCountsContinueAcrossTheReload) {
  KeyPool old_pool({make_key("a"), make_key("b")}, Strategy::ordered, m_clock);
  ASSERT_EQ(take(old_pool), 0);
  auto pool = KeyPool::reloaded(old_pool, {make_key("b"), make_key("a")}, Strategy::ordered);
  EXPECT_EQ(pool->health(1).in_flight, 1);
  // The request that started on the old pool finishes through it.
  old_pool.release(0);
  EXPECT_EQ(pool->health(1).in_flight, 0);
}

TEST_F(KeyPoolReloadTest, ReportsThroughTheOldPoolReachTheNewOne) {
  KeyPool old_pool({make_key("a")}, Strategy::ordered, m_clock);
  ASSERT_EQ(take(old_pool), 0);
  auto pool = KeyPool::reloaded(old_pool, {make_key("a")}, Strategy::ordered);
  old_pool.report(0, nullptr, test::cool(429, 1min, false, "429"));
  EXPECT_EQ(pool->health(0).state, KeyState::cooling);
  EXPECT_EQ(take(*pool), -1);
}

TEST_F(KeyPoolReloadTest, ReleasingARemovedKeyIsHarmless) {
  auto old_pool = std::make_shared<KeyPool>(std::vector<config::KeyConfig>{make_key("a"), make_key("gone")},
                                            Strategy::ordered, m_clock);
  ASSERT_EQ(take(*old_pool, {true}), 1);
  auto pool = KeyPool::reloaded(*old_pool, {make_key("a")}, Strategy::ordered);
  old_pool->report(1, nullptr, test::failure(503, 0ms, "503"));
  old_pool->release(1);
  EXPECT_EQ(old_pool->health(1).in_flight, 0);
  EXPECT_EQ(pool->size(), 1u);
  EXPECT_EQ(pool->health(0).error_count, 0u);
  old_pool.reset(); // the last request on the old pool is gone
  EXPECT_EQ(take(*pool), 0);
}

TEST_F(KeyPoolReloadTest, CellOutlivesTheOldPool) {
  auto old_pool =
      std::make_shared<KeyPool>(std::vector<config::KeyConfig>{make_key("a")}, Strategy::ordered, m_clock);
  old_pool->report(0, nullptr, test::disable(401, "401"));
  auto pool = KeyPool::reloaded(*old_pool, {make_key("a")}, Strategy::ordered);
  old_pool.reset();
  EXPECT_EQ(pool->health(0).state, KeyState::disabled);
}

TEST_F(KeyPoolReloadTest, DuplicateKeysDoNotShareOneCell) {
  KeyPool old_pool({make_key("a")}, Strategy::ordered, m_clock);
  old_pool.report(0, nullptr, test::disable(401, "401"));
  auto pool = KeyPool::reloaded(old_pool, {make_key("a"), make_key("a")}, Strategy::ordered);
  EXPECT_EQ(pool->health(0).state, KeyState::disabled);
  EXPECT_EQ(pool->health(1).state, KeyState::available);
}

TEST_F(KeyPoolReloadTest, ChangedKeyMaterialStartsFresh) {
  KeyPool old_pool({make_key("a")}, Strategy::ordered, m_clock);
  old_pool.report(0, nullptr, test::disable(401, "401"));
  auto pool = KeyPool::reloaded(old_pool, {make_key("a", "sk-rotated-key-material")}, Strategy::ordered);
  EXPECT_EQ(pool->health(0).state, KeyState::available);
}

} // namespace
} // namespace keyshim::pool
