// Alarms: the rule (a later deadline changes nothing, cancel silences, the
// owner is held while an alarm waits) on the event loop's one timer, and the
// fake source the exchange and connection tests run on.
#include "relay/alarm.hpp"
#include "support/fake_alarms.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Far longer than any wait these tests expect to complete (a few ms).
constexpr auto k_bound = 10s;

// Counts its rings; may arm again from inside one.
class Owner : public AlarmOwner, public std::enable_shared_from_this<Owner> {
public:
  explicit Owner(AlarmSource& source) : alarm(source, *this) {}
  void on_alarm() override {
    ++rings;
    if (then) {
      auto next = then;
      then = nullptr;
      next();
    }
  }
  std::shared_ptr<void> alarm_keepalive() override { return shared_from_this(); }

  Alarm alarm;
  int rings = 0;
  std::function<void()> then;
};

struct LoopAlarmTest : ::testing::Test {
  asio::io_context ioc{1};
  LoopAlarms alarms{ioc.get_executor()};
  std::shared_ptr<Owner> owner = std::make_shared<Owner>(alarms);

  bool run_until_idle() {
    ioc.run_for(k_bound);
    return ioc.stopped();
  }
};

TEST_F(LoopAlarmTest, ALaterDeadlineKeepsTheEarlierWaitAndStartsNoOther) {
  owner->alarm.arm(Clock::now() + 5ms);
  owner->alarm.arm(Clock::now() + 1h);
  EXPECT_TRUE(run_until_idle()) << "a wait is still pending: the later deadline started one";
  EXPECT_EQ(owner->rings, 1);
}

TEST_F(LoopAlarmTest, AnEarlierDeadlineReplacesTheLaterWait) {
  owner->alarm.arm(Clock::now() + 1h);
  owner->alarm.arm(Clock::now() + 5ms);
  EXPECT_TRUE(run_until_idle()) << "the hour-long wait is still pending: it was not aborted";
  EXPECT_EQ(owner->rings, 1);
}

TEST_F(LoopAlarmTest, CancelRingsNothingAndLetsGoOfTheOwnerAtOnce) {
  owner->alarm.arm(Clock::now() + 5ms);
  std::weak_ptr<Owner> weak = owner;
  owner->alarm.cancel();
  owner.reset();
  EXPECT_TRUE(weak.expired()) << "the cancelled wait still holds its owner";
  EXPECT_EQ(alarms.waiting(), 0u);
  EXPECT_TRUE(run_until_idle()) << "the timer still waits with no alarm left";
}

TEST_F(LoopAlarmTest, ACancelNeverDestroysTheOwnerInsideItsOwnCall) {
  // The wait holds the owner's last reference, as when nothing else is
  // pending for it: the owner is let go from the loop, after the call.
  owner->alarm.arm(Clock::now() + 1h);
  std::weak_ptr<Owner> weak = owner;
  Owner* raw = owner.get();
  owner.reset();
  raw->alarm.cancel();
  ASSERT_FALSE(weak.expired()) << "destroyed inside its own cancel()";
  EXPECT_EQ(raw->rings, 0);
  EXPECT_TRUE(run_until_idle());
  EXPECT_TRUE(weak.expired());
}

TEST_F(LoopAlarmTest, AlarmsOfManyOwnersRingInDueOrderOnTheOneTimer) {
  auto later = std::make_shared<Owner>(alarms);
  std::vector<char> order;
  owner->then = [&] { order.push_back('o'); };
  later->then = [&] { order.push_back('l'); };
  later->alarm.arm(Clock::now() + 20ms);
  owner->alarm.arm(Clock::now() + 5ms);
  EXPECT_EQ(alarms.waiting(), 2u);
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(order, (std::vector<char>{'o', 'l'}));
}

TEST_F(LoopAlarmTest, CancellingOneAlarmLeavesTheOthersWaiting) {
  auto other = std::make_shared<Owner>(alarms);
  other->alarm.arm(Clock::now() + 5ms);
  owner->alarm.arm(Clock::now() + 1ms);
  owner->alarm.cancel();
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(owner->rings, 0);
  EXPECT_EQ(other->rings, 1);
}

TEST_F(LoopAlarmTest, AWaitingAlarmHoldsItsOwnerUntilItRings) {
  owner->alarm.arm(Clock::now() + 1ms);
  std::weak_ptr<Owner> weak = owner;
  int rings_seen = 0;
  owner->then = [&rings_seen, weak] { rings_seen = weak.lock()->rings; };
  owner.reset();
  ASSERT_FALSE(weak.expired());
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(rings_seen, 1);
  EXPECT_TRUE(weak.expired());
}

TEST_F(LoopAlarmTest, AWaitThatRangIsOverSoTheNextArmStartsANewOne) {
  owner->alarm.arm(Clock::now() + 1ms);
  ASSERT_TRUE(run_until_idle());
  ioc.restart();
  owner->alarm.arm(Clock::now() + 1h); // later than the wait that rang, yet it must start
  EXPECT_EQ(ioc.poll(), 0u) << "nothing is due yet";
  owner->alarm.cancel();
  EXPECT_EQ(ioc.run_for(k_bound), 1u) << "a wait was pending: its aborted completion runs";
  EXPECT_TRUE(ioc.stopped()) << "cancel() left a wait pending";
  EXPECT_EQ(owner->rings, 1);
}

TEST_F(LoopAlarmTest, AnEarlierDeadlineReplacesAWaitThatIsAlreadyDue) {
  owner->alarm.arm(Clock::now() - 1s); // due at once: completes on the next poll
  owner->alarm.arm(Clock::now() - 2s);
  EXPECT_TRUE(run_until_idle());
  EXPECT_EQ(owner->rings, 1) << "the replaced wait, already due, rang as well";
}

struct FakeAlarmTest : ::testing::Test {
  asio::io_context ioc{1};
  test::FakeMonoClock clock;
  test::FakeAlarms alarms{clock};
  std::shared_ptr<Owner> a = std::make_shared<Owner>(alarms);
  std::shared_ptr<Owner> b = std::make_shared<Owner>(alarms);
};

TEST_F(FakeAlarmTest, RingsOnlyWhenTheClockReachesTheDeadline) {
  a->alarm.arm(clock.now() + 10s);
  alarms.advance(10s - 1ns);
  EXPECT_EQ(a->rings, 0);
  alarms.advance(1ns);
  EXPECT_EQ(a->rings, 1);
  EXPECT_EQ(alarms.waiting(), 0u);
}

TEST_F(FakeAlarmTest, ALaterDeadlineChangesNothingSoTheOwnerRingsAtTheEarlierOne) {
  const MonoTime start = clock.now();
  a->alarm.arm(start + 5s);
  a->alarm.arm(start + 60s);
  EXPECT_EQ(alarms.next_due(), start + 5s);
  alarms.advance(5s);
  EXPECT_EQ(a->rings, 1) << "the early ring is the owner's cue to look at its own deadline";
}

TEST_F(FakeAlarmTest, RingsInDueOrderWithTheClockAtEachAlarmsTime) {
  const MonoTime start = clock.now();
  std::vector<std::pair<char, MonoTime>> order;
  a->then = [&] { order.emplace_back('a', clock.now()); };
  b->then = [&] { order.emplace_back('b', clock.now()); };
  a->alarm.arm(start + 20s);
  b->alarm.arm(start + 5s);
  alarms.advance(1min);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], std::make_pair('b', start + 5s));
  EXPECT_EQ(order[1], std::make_pair('a', start + 20s));
  EXPECT_EQ(clock.now(), start + 1min);
}

TEST_F(FakeAlarmTest, AnAlarmArmedFromARingRingsAgainWithinTheSameAdvance) {
  const MonoTime start = clock.now();
  a->then = [&] { a->alarm.arm(clock.now() + 10s); };
  a->alarm.arm(start + 10s);
  alarms.advance(25s);
  EXPECT_EQ(a->rings, 2);
  EXPECT_EQ(alarms.next_due(), std::nullopt);
}

TEST_F(FakeAlarmTest, CancelRingsNothing) {
  a->alarm.arm(clock.now() + 1s);
  a->alarm.cancel();
  alarms.advance(1h);
  EXPECT_EQ(a->rings, 0);
  EXPECT_EQ(alarms.waiting(), 0u);
}

} // namespace
} // namespace keyshim::relay
