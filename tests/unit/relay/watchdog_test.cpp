#include "relay/watchdog.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

// Constructed time points: the watchdog is pure arithmetic, so no real time
// and no sleeping.
const MonoTime t0 = MonoTime{} + 5s;

TEST(Watchdog, StartsWithNothingToWaitFor) {
  Watchdog watchdog;
  EXPECT_EQ(watchdog.kind(), Watchdog::Kind::none);
  EXPECT_FALSE(watchdog.expired(t0));
  EXPECT_FALSE(watchdog.expired(MonoTime::max()));
}

TEST(Watchdog, ExpiredIsFalseBeforeDueAndTrueAtAndAfterDue) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::first_byte, t0, 10s);
  EXPECT_EQ(watchdog.due(), t0 + 10s);
  EXPECT_FALSE(watchdog.expired(t0));
  EXPECT_FALSE(watchdog.expired(t0 + 10s - 1ns));
  EXPECT_TRUE(watchdog.expired(t0 + 10s));
  EXPECT_TRUE(watchdog.expired(t0 + 1h));
}

TEST(Watchdog, ConnectDeadlineIsFixedFromItsStart) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::connect, t0, 10s);
  watchdog.note_progress(t0 + 9s);
  EXPECT_EQ(watchdog.kind(), Watchdog::Kind::connect);
  EXPECT_EQ(watchdog.due(), t0 + 10s);
  EXPECT_FALSE(watchdog.expired(t0 + 9999ms));
  EXPECT_TRUE(watchdog.expired(t0 + 10s));
}

TEST(Watchdog, FirstByteDeadlineIsNotMovedByProgress) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::first_byte, t0, 600s);
  watchdog.note_progress(t0 + 100s); // e.g. request body bytes still going out
  watchdog.note_progress(t0 + 599s);
  EXPECT_EQ(watchdog.due(), t0 + 600s);
  EXPECT_TRUE(watchdog.expired(t0 + 600s));
}

TEST(Watchdog, IdleDeadlineMovesWithProgress) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::idle, t0, 300ms);
  EXPECT_EQ(watchdog.due(), t0 + 300ms);
  watchdog.note_progress(t0 + 200ms);
  EXPECT_EQ(watchdog.due(), t0 + 500ms);
  EXPECT_FALSE(watchdog.expired(t0 + 400ms));
  watchdog.note_progress(t0 + 450ms);
  EXPECT_EQ(watchdog.due(), t0 + 750ms);
  EXPECT_FALSE(watchdog.expired(t0 + 749ms));
  EXPECT_TRUE(watchdog.expired(t0 + 750ms));
}

TEST(Watchdog, ANewStartReplacesTheDeadline) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::connect, t0, 10s);
  watchdog.start(Watchdog::Kind::first_byte, t0 + 2s, 60s);
  EXPECT_EQ(watchdog.kind(), Watchdog::Kind::first_byte);
  EXPECT_EQ(watchdog.due(), t0 + 62s);
  EXPECT_FALSE(watchdog.expired(t0 + 10s));
}

TEST(Watchdog, StopMeansNeverExpired) {
  Watchdog watchdog;
  watchdog.start(Watchdog::Kind::idle, t0, 1s);
  watchdog.stop();
  EXPECT_EQ(watchdog.kind(), Watchdog::Kind::none);
  EXPECT_FALSE(watchdog.expired(t0 + 1s));
  EXPECT_FALSE(watchdog.expired(MonoTime::max()));
  watchdog.note_progress(t0 + 2s);
  EXPECT_FALSE(watchdog.expired(MonoTime::max()));
}

} // namespace
} // namespace keyshim::relay
