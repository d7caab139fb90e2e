// util::ClockTurn: within one turn of the event loop the real clocks read the
// time once; outside a turn, and on other threads, they read it every time.
#include "util/clock.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace keyshim::util {
namespace {

using std::chrono::steady_clock;
using std::chrono::system_clock;

// Spins (boundedly) until both real clocks have moved past the given times.
void let_time_pass(steady_clock::time_point steady, system_clock::time_point wall) {
  for (int i = 0; i < 100'000'000; ++i) {
    if (steady_clock::now() > steady && system_clock::now() > wall) {
      return;
    }
  }
  FAIL() << "the clocks did not move";
}

// A read of each real clock now is later than the given time.
void expect_fresh_reads(steady_clock::time_point steady, system_clock::time_point wall) {
  EXPECT_GT(util::steady_clock().now(), steady);
  EXPECT_GT(util::system_clock().now(), wall);
}

TEST(ClockTurn, AnswersEveryReadInATurnWithTheFirst) {
  ClockTurn turn;
  steady_clock::time_point steady = util::steady_clock().now();
  TimePoint wall = util::system_clock().now();
  let_time_pass(steady, wall);
  EXPECT_EQ(util::steady_clock().now(), steady);
  EXPECT_EQ(util::system_clock().now(), wall);
}

TEST(ClockTurn, ReadsTheClockAgainOnceTheTurnEnds) {
  steady_clock::time_point steady;
  TimePoint wall;
  {
    ClockTurn turn;
    steady = util::steady_clock().now();
    wall = util::system_clock().now();
    let_time_pass(steady, wall);
  }
  expect_fresh_reads(steady, wall);
}

TEST(ClockTurn, OutsideATurnEveryReadIsFresh) {
  steady_clock::time_point steady = util::steady_clock().now();
  TimePoint wall = util::system_clock().now();
  let_time_pass(steady, wall);
  expect_fresh_reads(steady, wall);
}

TEST(ClockTurn, AnInnerTurnEndingKeepsTheOuterTurnsTime) {
  ClockTurn outer;
  steady_clock::time_point steady = util::steady_clock().now();
  {
    ClockTurn inner;
    EXPECT_EQ(util::steady_clock().now(), steady);
  }
  let_time_pass(steady, util::system_clock().now());
  EXPECT_EQ(util::steady_clock().now(), steady);
}

TEST(ClockTurn, AnotherThreadReadsTheClockDuringATurn) {
  ClockTurn turn;
  steady_clock::time_point steady = util::steady_clock().now();
  let_time_pass(steady, util::system_clock().now());
  steady_clock::time_point seen;
  std::thread other([&seen] { seen = util::steady_clock().now(); });
  other.join();
  EXPECT_GT(seen, steady);
}

} // namespace
} // namespace keyshim::util
