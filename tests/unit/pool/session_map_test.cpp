// The bounded memory of which key each session used: ttl, LRU order, bound.
#include "pool/session_map.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;

class SessionMapTest : public ::testing::Test {
protected:
  test::FakeClock m_clock;
};

TEST_F(SessionMapTest, ABoundSessionFindsItsKey) {
  SessionMap sessions(1h);
  EXPECT_FALSE(sessions.find(7, m_clock.now()));
  sessions.bind(7, 42, m_clock.now());
  EXPECT_EQ(sessions.find(7, m_clock.now()), 42u);
  sessions.bind(7, 43, m_clock.now()); // it moved
  EXPECT_EQ(sessions.find(7, m_clock.now()), 43u);
  EXPECT_EQ(sessions.size(), 1u);
}

TEST_F(SessionMapTest, ASessionUnusedForTheTtlIsForgotten) {
  SessionMap sessions(1h);
  sessions.bind(1, 10, m_clock.now());
  m_clock.advance(59min);
  EXPECT_EQ(sessions.find(1, m_clock.now()), 10u); // a use restarts the ttl
  m_clock.advance(59min);
  EXPECT_EQ(sessions.find(1, m_clock.now()), 10u);
  m_clock.advance(1h);
  EXPECT_FALSE(sessions.find(1, m_clock.now()));
  EXPECT_EQ(sessions.size(), 0u);
}

TEST_F(SessionMapTest, ExpiredSessionsAreDroppedWhenOthersBind) {
  SessionMap sessions(1h);
  sessions.bind(1, 10, m_clock.now());
  sessions.bind(2, 10, m_clock.now());
  m_clock.advance(2h);
  sessions.bind(3, 11, m_clock.now());
  EXPECT_EQ(sessions.size(), 1u);
}

TEST_F(SessionMapTest, TheLeastRecentlyUsedSessionGoesFirstAtTheBound) {
  SessionMap sessions(1h, 3);
  sessions.bind(1, 10, m_clock.now());
  sessions.bind(2, 10, m_clock.now());
  sessions.bind(3, 10, m_clock.now());
  ASSERT_TRUE(sessions.find(1, m_clock.now())); // 2 is now the least recently used
  sessions.bind(4, 10, m_clock.now());
  EXPECT_EQ(sessions.size(), 3u);
  EXPECT_FALSE(sessions.find(2, m_clock.now()));
  EXPECT_TRUE(sessions.find(1, m_clock.now()));
  EXPECT_TRUE(sessions.find(3, m_clock.now()));
  EXPECT_TRUE(sessions.find(4, m_clock.now()));
}

TEST_F(SessionMapTest, ManySessionsNeverHoldMoreThanTheBound) {
  SessionMap sessions(1h);
  for (std::uint64_t session = 1; session <= 3 * SessionMap::k_default_capacity; ++session) {
    sessions.bind(session, session % 3, m_clock.now());
  }
  EXPECT_EQ(sessions.size(), SessionMap::k_default_capacity);
  EXPECT_TRUE(sessions.find(3 * SessionMap::k_default_capacity, m_clock.now()));
  EXPECT_FALSE(sessions.find(1, m_clock.now()));
}

TEST_F(SessionMapTest, AZeroTtlTurnsAffinityOffAndForgetsEverySession) {
  SessionMap sessions(1h);
  sessions.bind(1, 10, m_clock.now());
  EXPECT_TRUE(sessions.enabled());
  sessions.set_ttl(0ms);
  EXPECT_FALSE(sessions.enabled());
  EXPECT_EQ(sessions.size(), 0u);
  sessions.bind(2, 10, m_clock.now());
  EXPECT_FALSE(sessions.find(2, m_clock.now()));
  sessions.set_ttl(10min);
  sessions.bind(2, 10, m_clock.now());
  EXPECT_EQ(sessions.find(2, m_clock.now()), 10u);
}

TEST_F(SessionMapTest, CountsLiveSessionsPerKey) {
  SessionMap sessions(1h);
  sessions.bind(1, 10, m_clock.now());
  m_clock.advance(30min);
  sessions.bind(2, 11, m_clock.now());
  sessions.bind(3, 11, m_clock.now());
  sessions.bind(4, 99, m_clock.now()); // a key the caller does not ask about
  EXPECT_EQ(sessions.count({10, 11, 12}, m_clock.now()), (std::vector<std::size_t>{1, 2, 0}));
  m_clock.advance(45min); // session 1 is past its ttl
  EXPECT_EQ(sessions.count({10, 11, 12}, m_clock.now()), (std::vector<std::size_t>{0, 2, 0}));
}

} // namespace
} // namespace keyshim::pool
