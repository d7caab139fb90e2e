// DeadlineTimer on a real io_context: the loop returns once no wait is
// pending, so each test ends as soon as the handlers it expects have run. A
// broken timer leaves an hour-long wait behind; the loop then runs out its
// bound instead, and the test fails on what has (not) run.
#include "relay/deadline_timer.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Far longer than any wait these tests expect to complete (a few ms), far
// shorter than the hour-long waits that must never be pending.
constexpr auto k_bound = 10s;

struct DeadlineTimerTest : ::testing::Test {
  asio::io_context ioc{1};
  DeadlineTimer timer{ioc.get_executor()};
  int first = 0;
  int second = 0;

  // Runs the loop until no wait is pending, or for k_bound at most; whether
  // it ran out of work, i.e. no wait was left pending.
  bool run_until_idle() {
    ioc.run_for(k_bound);
    return ioc.stopped();
  }
};

TEST_F(DeadlineTimerTest, ALaterDeadlineKeepsTheEarlierWaitAndStartsNoOther) {
  timer.arm(Clock::now() + 5ms, [this] { ++first; });
  timer.arm(Clock::now() + 1h, [this] { ++second; });
  EXPECT_TRUE(run_until_idle()) << "a wait is still pending: the later deadline started one";
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
}

TEST_F(DeadlineTimerTest, AnEarlierDeadlineReplacesTheLaterWait) {
  timer.arm(Clock::now() + 1h, [this] { ++first; });
  timer.arm(Clock::now() + 5ms, [this] { ++second; });
  EXPECT_TRUE(run_until_idle()) << "the hour-long wait is still pending: it was not aborted";
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST_F(DeadlineTimerTest, CancelRunsNoHandler) {
  timer.arm(Clock::now() + 5ms, [this] { ++first; });
  timer.cancel();
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(first, 0);
}

TEST_F(DeadlineTimerTest, AWaitThatFiredIsOverSoTheNextArmStartsANewOne) {
  timer.arm(Clock::now() + 1ms, [this] { ++first; });
  ASSERT_TRUE(run_until_idle());
  ioc.restart();
  timer.arm(Clock::now() + 1h, [this] { ++second; }); // later than the fired wait, yet it must start
  EXPECT_EQ(ioc.poll(), 0u) << "nothing is due yet";
  timer.cancel();
  EXPECT_EQ(ioc.run_for(k_bound), 1u) << "a wait was pending: its aborted completion runs";
  EXPECT_TRUE(ioc.stopped()) << "cancel() left a wait pending";
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
}

TEST_F(DeadlineTimerTest, AnEarlierDeadlineReplacesAWaitThatIsAlreadyDue) {
  timer.arm(Clock::now() - 1s, [this] { ++first; }); // due at once: completes on the next poll
  timer.arm(Clock::now() - 2s, [this] { ++second; });
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

} // namespace
} // namespace keyshim::relay
