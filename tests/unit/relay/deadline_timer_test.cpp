// DeadlineTimer on a real io_context: run() returns once no wait is pending,
// so each test ends as soon as the handlers it expects have run.
#include "relay/deadline_timer.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct DeadlineTimerTest : ::testing::Test {
  asio::io_context ioc{1};
  DeadlineTimer timer{ioc.get_executor()};
  int first = 0;
  int second = 0;
};

TEST_F(DeadlineTimerTest, ALaterDeadlineKeepsTheEarlierWaitAndStartsNoOther) {
  timer.arm(Clock::now() + 5ms, [this] { ++first; });
  timer.arm(Clock::now() + 1h, [this] { ++second; });
  ioc.run(); // would block for an hour if the later wait had been started
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
}

TEST_F(DeadlineTimerTest, AnEarlierDeadlineReplacesTheLaterWait) {
  timer.arm(Clock::now() + 1h, [this] { ++first; });
  timer.arm(Clock::now() + 5ms, [this] { ++second; });
  ioc.run(); // the hour-long wait was aborted, so this returns
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST_F(DeadlineTimerTest, CancelRunsNoHandler) {
  timer.arm(Clock::now() + 5ms, [this] { ++first; });
  timer.cancel();
  ioc.run();
  EXPECT_EQ(first, 0);
}

TEST_F(DeadlineTimerTest, AWaitThatFiredIsOverSoTheNextArmStartsANewOne) {
  timer.arm(Clock::now() + 1ms, [this] { ++first; });
  ioc.run();
  ioc.restart();
  timer.arm(Clock::now() + 1h, [this] { ++second; }); // later than the fired wait, yet it must start
  EXPECT_EQ(ioc.poll(), 0u) << "nothing is due yet";
  timer.cancel();
  EXPECT_EQ(ioc.run(), 1u) << "a wait was pending: its aborted completion runs";
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
}

TEST_F(DeadlineTimerTest, AnEarlierDeadlineReplacesAWaitThatIsAlreadyDue) {
  timer.arm(Clock::now() - 1s, [this] { ++first; }); // due at once: completes on the next poll
  timer.arm(Clock::now() - 2s, [this] { ++second; });
  ioc.run();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

} // namespace
} // namespace keyshim::relay
