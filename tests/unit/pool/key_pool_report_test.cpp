// KeyPool::report, the one way an attempt's outcome reaches a key's health,
// and cooling_for, the one question the relay asks about a cooldown.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;

std::uint64_t failures_of(const UsageCounts& usage, FailureClass failure) {
  return usage.failures.at(static_cast<std::size_t>(failure));
}

class KeyPoolReportTest : public ::testing::Test {
protected:
  test::FakeClock m_clock;
  KeyPool m_pool{make_keys({"a", "b"}), Strategy::ordered, m_clock};
  const std::string m_sick = "s04";
  const std::string m_fine = "ok";
};

TEST_F(KeyPoolReportTest, SuccessClearsTheKeysStreaksAndTheModelsTrouble) {
  m_pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  m_pool.report(0, nullptr, test::cool(429, 1s, true, "429"));
  m_pool.report(0, &m_sick, test::failure(503, 0ms, "503", Scope::model));
  m_pool.report(0, &m_fine, test::failure(503, 0ms, "503", Scope::model));
  Streaks after = m_pool.report(0, &m_sick, test::success(200));
  EXPECT_EQ(after.failures, 0);
  EXPECT_EQ(after.rate_limits, 0);
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.consecutive_failures, 0);
  EXPECT_EQ(health.consecutive_rate_limits, 0);
  EXPECT_EQ(health.ok_count, 1u);
  EXPECT_EQ(health.error_count, 4u);
  EXPECT_EQ(health.last_status, 200);
  ASSERT_EQ(health.models.size(), 1u); // only the model that answered is cleared
  EXPECT_EQ(health.models[0].model, m_fine);
}

TEST_F(KeyPoolReportTest, FailureReturnsTheGrownStreakAndCoolsOnlyWithACooldown) {
  EXPECT_EQ(m_pool.report(0, nullptr, test::failure(502, 0ms, "502")).failures, 1);
  EXPECT_EQ(m_pool.report(0, nullptr, test::failure(0, 0ms, "connect error")).failures, 2);
  EXPECT_EQ(m_pool.health(0).state, KeyState::available);
  Streaks third = m_pool.report(0, nullptr, test::failure(502, 30s, "502"));
  EXPECT_EQ(third.failures, 3);
  EXPECT_EQ(third.rate_limits, 0);
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_EQ(health.until, m_clock.now() + 30s);
  EXPECT_EQ(health.reason, "502");
  EXPECT_EQ(health.last_status, 502);
}

TEST_F(KeyPoolReportTest, CoolGrowsTheRateLimitStreakOnlyWhenRateLimited) {
  EXPECT_EQ(m_pool.report(0, nullptr, test::cool(429, 5s, false, "429 Retry-After")).rate_limits, 0);
  EXPECT_EQ(m_pool.report(0, nullptr, test::cool(429, 60s, true, "429")).rate_limits, 1);
  Streaks second = m_pool.report(0, nullptr, test::cool(429, 120s, true, "429"));
  EXPECT_EQ(second.rate_limits, 2);
  EXPECT_EQ(second.failures, 0);
  EXPECT_EQ(m_pool.health(0).until, m_clock.now() + 120s);
}

TEST_F(KeyPoolReportTest, AModelScopedFailureChangesOnlyThePair) {
  m_pool.report(0, &m_sick, test::failure(503, 0ms, "503", Scope::model));
  Streaks streaks = m_pool.report(0, &m_sick, test::failure(503, 30s, "503", Scope::model));
  EXPECT_EQ(streaks.failures, 2);
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.state, KeyState::available);
  EXPECT_EQ(health.consecutive_failures, 0);
  EXPECT_EQ(health.error_count, 2u);
  ASSERT_EQ(health.models.size(), 1u);
  EXPECT_EQ(health.models[0].until, m_clock.now() + 30s);
  EXPECT_EQ(health.models[0].reason, "503");
  EXPECT_TRUE(m_pool.cooling_for(0, &m_sick));
  EXPECT_FALSE(m_pool.cooling_for(0, &m_fine));
  EXPECT_FALSE(m_pool.cooling_for(0));
}

TEST_F(KeyPoolReportTest, AKeyScopedFailureWithAModelChangesTheKey) {
  Streaks streaks = m_pool.report(0, &m_sick, test::failure(0, 10s, "connect error"));
  EXPECT_EQ(streaks.failures, 1);
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_TRUE(health.models.empty());
  EXPECT_TRUE(m_pool.cooling_for(0, &m_fine));
}

TEST_F(KeyPoolReportTest, AModelScopeWithoutAModelChangesTheKey) {
  Streaks streaks = m_pool.report(0, nullptr, test::cool(429, 10s, true, "429", Scope::model));
  EXPECT_EQ(streaks.rate_limits, 1);
  EXPECT_EQ(m_pool.health(0).state, KeyState::cooling);
  EXPECT_EQ(m_pool.health(0).consecutive_rate_limits, 1);
}

TEST_F(KeyPoolReportTest, AModelsCooldownIsNeverShortened) {
  const util::TimePoint start = m_clock.now();
  m_pool.report(0, &m_sick, test::cool(429, 10min, false, "429 Retry-After", Scope::model));
  m_pool.report(0, &m_sick, test::failure(503, 30s, "503", Scope::model));
  KeyHealth health = m_pool.health(0);
  ASSERT_EQ(health.models.size(), 1u);
  EXPECT_EQ(health.models[0].until, start + 10min);
  EXPECT_EQ(health.models[0].reason, "429 Retry-After");
  m_clock.advance(1min);
  m_pool.report(0, &m_sick, test::cool(429, 20min, false, "429 retryDelay", Scope::model));
  health = m_pool.health(0);
  EXPECT_EQ(health.models[0].until, start + 21min);
  EXPECT_EQ(health.models[0].reason, "429 retryDelay");
}

TEST_F(KeyPoolReportTest, AFailedProbeEndsTheProbe) {
  m_pool.report(0, &m_sick, test::cool(429, 10s, true, "429", Scope::model));
  m_clock.advance(10s);
  Selection probe = m_pool.acquire({false, true}, &m_sick);
  ASSERT_TRUE(probe.index);
  ASSERT_EQ(*probe.index, 0u);
  ASSERT_TRUE(probe.probe);
  m_pool.report(0, &m_sick, test::failure(503, 0ms, "503", Scope::model)); // no cooldown: no new cooling
  Selection next = m_pool.acquire({false, true}, &m_sick);
  ASSERT_TRUE(next.index);
  EXPECT_EQ(*next.index, 0u);
  EXPECT_TRUE(next.probe); // probing again, though the first probe is still held
}

TEST_F(KeyPoolReportTest, DisableIsTheKeysWhateverTheModel) {
  m_pool.report(0, &m_sick, test::disable(401, "401 unauthorized"));
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.state, KeyState::disabled);
  EXPECT_EQ(health.reason, "401 unauthorized");
  EXPECT_EQ(health.last_status, 401);
  EXPECT_EQ(health.error_count, 1u);
  EXPECT_TRUE(health.models.empty());
  EXPECT_FALSE(m_pool.cooling_for(0, &m_sick)); // disabled is not cooling: no wait ends it
}

TEST_F(KeyPoolReportTest, NoneOnlySetsTheLastStatusAndCountsTheAttempt) {
  m_pool.report(0, nullptr, test::failure(503, 0ms, "503"));
  Streaks streaks = m_pool.report(0, &m_sick, test::neutral(404));
  EXPECT_EQ(streaks.failures, 1);
  KeyHealth health = m_pool.health(0);
  EXPECT_EQ(health.last_status, 404);
  EXPECT_EQ(health.consecutive_failures, 1);
  EXPECT_EQ(health.ok_count, 0u);
  EXPECT_EQ(health.error_count, 1u);
  EXPECT_EQ(health.state, KeyState::available);
  EXPECT_TRUE(health.models.empty());
  EXPECT_EQ(health.total.requests, 2u);
  EXPECT_EQ(failures_of(health.total, FailureClass::server), 1u);
}

TEST_F(KeyPoolReportTest, EveryReportCountsOneAttemptAndItsFailureClass) {
  m_pool.report(0, nullptr, test::success(200));
  m_pool.report(0, &m_sick, test::cool(429, 1s, true, "429", Scope::model));
  m_pool.report(0, nullptr, test::cool(429, 1s, true, "429"));
  m_pool.report(0, nullptr, test::failure(0, 0ms, "connect error"));
  m_pool.report(0, nullptr, test::disable(402, "billing (402)"));
  m_pool.report(0, nullptr, test::neutral(400));
  m_pool.report(1, nullptr, test::disable(401, "401"));
  KeyHealth health = m_pool.health(0);
  for (const UsageCounts& usage : {health.today, health.total}) {
    EXPECT_EQ(usage.requests, 6u);
    EXPECT_EQ(failures_of(usage, FailureClass::rate_limit), 2u);
    EXPECT_EQ(failures_of(usage, FailureClass::transport), 1u);
    EXPECT_EQ(failures_of(usage, FailureClass::quota), 1u);
    EXPECT_EQ(failures_of(usage, FailureClass::auth), 0u);
    EXPECT_EQ(failures_of(usage, FailureClass::server), 0u);
  }
  EXPECT_EQ(health.ok_count, 1u);
  EXPECT_EQ(health.error_count, 4u);
  EXPECT_EQ(m_pool.health(1).total.requests, 1u);
  EXPECT_EQ(failures_of(m_pool.health(1).total, FailureClass::auth), 1u);
}

// keyshim top shows a key's last error with its time, after the cooldown it
// caused has ended and successes followed; a relayed 4xx is no error of the key.
TEST_F(KeyPoolReportTest, TheLastErrorKeepsItsStatusReasonAndTimeThroughLaterSuccesses) {
  EXPECT_FALSE(m_pool.health(0).last_error);
  m_pool.report(0, &m_sick, test::cool(429, 1s, true, "429 Retry-After", Scope::model));
  const util::TimePoint failed_at = m_clock.now();
  m_clock.advance(5s);
  m_pool.report(0, nullptr, test::success(200));
  m_pool.report(0, nullptr, test::neutral(400));
  std::optional<LastError> last = m_pool.health(0).last_error;
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 429);
  EXPECT_EQ(last->reason, "429 Retry-After");
  EXPECT_EQ(last->at, failed_at);

  m_pool.report(0, nullptr, test::failure(0, 0ms, "connect error"));
  last = m_pool.health(0).last_error;
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 0);
  EXPECT_EQ(last->reason, "connect error");
  EXPECT_EQ(last->at, failed_at + 5s);
  EXPECT_FALSE(m_pool.health(1).last_error);
}

TEST_F(KeyPoolReportTest, CoolingForEndsExactlyWhenTheCooldownDoesByThePoolsClock) {
  m_pool.report(0, nullptr, test::cool(429, 30s, false, "429 Retry-After"));
  m_pool.report(1, &m_sick, test::cool(429, 10s, true, "429", Scope::model));
  EXPECT_TRUE(m_pool.cooling_for(0));
  EXPECT_TRUE(m_pool.cooling_for(0, &m_fine)); // the key cools for every model
  EXPECT_FALSE(m_pool.cooling_for(1));
  EXPECT_TRUE(m_pool.cooling_for(1, &m_sick));
  m_clock.advance(10s - 1ms);
  EXPECT_TRUE(m_pool.cooling_for(1, &m_sick));
  m_clock.advance(1ms);
  EXPECT_FALSE(m_pool.cooling_for(1, &m_sick));
  m_clock.advance(20s - 1ms);
  EXPECT_TRUE(m_pool.cooling_for(0));
  m_clock.advance(1ms);
  EXPECT_FALSE(m_pool.cooling_for(0));
  EXPECT_FALSE(m_pool.cooling_for(0, &m_fine));
}

} // namespace
} // namespace keyshim::pool
