// Sessions stay on one key while it is eligible, under every strategy, and
// move once when it is not (docs/behaviour.md §4).
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <set>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_key;
using test::make_keys;

constexpr std::uint64_t k_session_a = 0xa;
constexpr std::uint64_t k_session_b = 0xb;
constexpr std::uint64_t k_session_c = 0xc;

class KeyPoolAffinityTest : public ::testing::Test {
protected:
  // Acquire for `session` and release at once: the chosen index, or -1.
  static int serve(KeyPool& pool, std::uint64_t session, const std::vector<bool>& excluded = {},
                   const std::string* model = nullptr) {
    Selection selection = pool.acquire(excluded, model, Affinity{session, 0});
    if (!selection.index) {
      return -1;
    }
    pool.release(*selection.index);
    return static_cast<int>(*selection.index);
  }

  test::FakeClock m_clock;
};

TEST_F(KeyPoolAffinityTest, TwoInterleavedSessionsUnderRoundRobinEachKeepOneKey) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  std::set<int> keys_a;
  std::set<int> keys_b;
  for (int i = 0; i < 10; ++i) {
    keys_a.insert(serve(pool, k_session_a));
    keys_b.insert(serve(pool, k_session_b));
  }
  EXPECT_EQ(keys_a, std::set<int>{0});
  EXPECT_EQ(keys_b, std::set<int>{1});
}

TEST_F(KeyPoolAffinityTest, AKeptKeyLeavesTheRoundRobinCursorForNewSessions) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  EXPECT_EQ(serve(pool, k_session_a), 0);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(serve(pool, k_session_a), 0);
  }
  EXPECT_EQ(serve(pool, k_session_b), 1);
  EXPECT_EQ(serve(pool, k_session_c), 2);
  EXPECT_EQ(test::take(pool), 0); // a request of no session goes on where the cursor is
}

TEST_F(KeyPoolAffinityTest, LeastRecentlyUsedSendsNewSessionsAwayFromBusyOnes) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::least_recently_used, m_clock);
  EXPECT_EQ(serve(pool, k_session_a), 0);
  m_clock.advance(1s);
  EXPECT_EQ(serve(pool, k_session_b), 1);
  m_clock.advance(1s);
  EXPECT_EQ(serve(pool, k_session_a), 0); // key 0 is now the most recently used
  m_clock.advance(1s);
  EXPECT_EQ(serve(pool, k_session_c), 1);
}

TEST_F(KeyPoolAffinityTest, ASessionMovesOnceWhenItsKeyCoolsAndStaysAfterItRecovers) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  ASSERT_EQ(serve(pool, k_session_a), 0);
  ASSERT_EQ(serve(pool, k_session_b), 1);
  pool.report(0, nullptr, test::cool(429, 30s, true, "429"));
  EXPECT_EQ(serve(pool, k_session_a), 2); // the strategy's next key
  m_clock.advance(1min);
  ASSERT_FALSE(pool.cooling_for(0));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(serve(pool, k_session_a), 2);
    EXPECT_EQ(serve(pool, k_session_b), 1);
  }
}

TEST_F(KeyPoolAffinityTest, ASessionMovesWhenItsKeyCoolsForTheRequestsModel) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::ordered, m_clock);
  const std::string model = "gpt-x";
  ASSERT_EQ(serve(pool, k_session_a, {}, &model), 0);
  pool.report(0, &model, test::cool(429, 30s, true, "429", Scope::model));
  EXPECT_EQ(serve(pool, k_session_a, {}, &model), 1);
  EXPECT_EQ(serve(pool, k_session_a), 1); // and stays, for every model
}

TEST_F(KeyPoolAffinityTest, ASessionMovesWhenItsKeyIsDisabled) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::ordered, m_clock);
  ASSERT_EQ(serve(pool, k_session_a), 0);
  pool.report(0, nullptr, test::disable(401, "401"));
  EXPECT_EQ(serve(pool, k_session_a), 1);
}

TEST_F(KeyPoolAffinityTest, ASessionMovesWhenItsKeyIsAtMaxConcurrent) {
  std::vector<config::KeyConfig> keys = make_keys({"a", "b"});
  keys[0].max_concurrent = 1;
  KeyPool pool(std::move(keys), Strategy::ordered, m_clock);
  Selection held = pool.acquire({}, nullptr, Affinity{k_session_a, 0});
  ASSERT_EQ(held.index, 0u);
  EXPECT_EQ(serve(pool, k_session_a), 1);
  pool.release(0);
  EXPECT_EQ(serve(pool, k_session_a), 1);
}

TEST_F(KeyPoolAffinityTest, ASessionMovesOffAKeyItsRequestExcluded) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  ASSERT_EQ(serve(pool, k_session_a), 0);
  EXPECT_EQ(serve(pool, k_session_a, {true}), 1);
  EXPECT_EQ(serve(pool, k_session_a), 1);
}

TEST_F(KeyPoolAffinityTest, AConnectionsKeyIsPreferredWithoutBeingRemembered) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  Selection first = pool.acquire({});
  ASSERT_EQ(first.index, 0u);
  EXPECT_EQ(first.key_id, pool.key_id(0));
  pool.release(0);
  for (int i = 0; i < 4; ++i) {
    Selection again = pool.acquire({}, nullptr, Affinity{0, first.key_id});
    ASSERT_EQ(again.index, 0u);
    pool.release(0);
  }
  EXPECT_EQ(test::take(pool), 1); // the cursor did not move for the connection
  EXPECT_EQ(pool.snapshot().at(0).sessions, 0u);
}

TEST_F(KeyPoolAffinityTest, KeyIdsAreDistinctAndNeverZero) {
  KeyPool one(make_keys({"a", "b"}), Strategy::ordered, m_clock);
  KeyPool two(make_keys({"a"}), Strategy::ordered, m_clock);
  std::set<std::uint64_t> ids = {one.key_id(0), one.key_id(1), two.key_id(0)};
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.count(0), 0u);
}

TEST_F(KeyPoolAffinityTest, AKeyOfAnotherPoolIsNoPreference) {
  KeyPool pool(make_keys({"a", "b"}), Strategy::round_robin, m_clock);
  KeyPool other(make_keys({"b"}), Strategy::round_robin, m_clock);
  Selection selection = pool.acquire({}, nullptr, Affinity{0, other.key_id(0)});
  EXPECT_EQ(selection.index, 0u);
}

TEST_F(KeyPoolAffinityTest, AZeroSessionTtlTurnsAffinityOff) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  pool.set_session_ttl(0ms);
  std::vector<int> keys;
  for (int i = 0; i < 3; ++i) {
    keys.push_back(serve(pool, k_session_a));
  }
  EXPECT_EQ(keys, (std::vector<int>{0, 1, 2}));
  Selection connection = pool.acquire({}, nullptr, Affinity{0, pool.key_id(2)});
  EXPECT_EQ(connection.index, 0u);
}

TEST_F(KeyPoolAffinityTest, ASessionUnusedForItsTtlChoosesAgain) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  pool.set_session_ttl(10min);
  ASSERT_EQ(serve(pool, k_session_a), 0);
  ASSERT_EQ(serve(pool, k_session_b), 1);
  m_clock.advance(11min);
  EXPECT_EQ(serve(pool, k_session_a), 2);
}

TEST_F(KeyPoolAffinityTest, StatusCountsTheSessionsOfEachKey) {
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock);
  serve(pool, k_session_a);
  serve(pool, k_session_b);
  serve(pool, k_session_c);
  pool.report(2, nullptr, test::disable(401, "401"));
  serve(pool, k_session_c); // moves to key 0
  std::vector<KeySnapshot> keys = pool.snapshot();
  EXPECT_EQ(keys.at(0).sessions, 2u);
  EXPECT_EQ(keys.at(1).sessions, 1u);
  EXPECT_EQ(keys.at(2).sessions, 0u);
}

TEST_F(KeyPoolAffinityTest, AReloadKeepsTheSessionsOfTheKeysItKeeps) {
  KeyPool before({make_key("a"), make_key("b"), make_key("c")}, Strategy::round_robin, m_clock);
  ASSERT_EQ(serve(before, k_session_a), 0);
  ASSERT_EQ(serve(before, k_session_b), 1);
  ASSERT_EQ(serve(before, k_session_c), 2);
  // "b" is gone, "a" and "c" change places, "d" is new.
  auto after =
      KeyPool::reloaded(before, {make_key("c"), make_key("d"), make_key("a")}, Strategy::round_robin);
  EXPECT_EQ(serve(*after, k_session_a), 2);
  EXPECT_EQ(serve(*after, k_session_c), 0);
  int moved = serve(*after, k_session_b);
  EXPECT_NE(moved, -1);
  EXPECT_EQ(serve(*after, k_session_b), moved);
  EXPECT_EQ(after->key_id(2), before.key_id(0));
}

TEST_F(KeyPoolAffinityTest, AReloadsSessionTtlAppliesToTheSessionsItKept) {
  KeyPool before(make_keys({"a", "b"}), Strategy::round_robin, m_clock);
  ASSERT_EQ(serve(before, k_session_a), 0);
  auto after = KeyPool::reloaded(before, make_keys({"a", "b"}), Strategy::round_robin);
  after->set_session_ttl(0ms);
  EXPECT_EQ(after->snapshot().at(0).sessions, 0u);
  EXPECT_EQ(serve(before, k_session_a), 1); // the old generation shares the map: off there too
}

} // namespace
} // namespace keyshim::pool
