// The windows of the limits of one's own: clock minutes, and days that begin
// at day_start in a zone, across daylight-saving changes.
#include "pool/budget.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace keyshim::pool {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

util::TimePoint utc(int y, int mo, int d, int h, int mi = 0, int s = 0) {
  return sys_days{year{y} / mo / d} + hours{h} + minutes{mi} + seconds{s};
}

constexpr config::DayZone k_local{};
constexpr config::DayZone k_utc{false, 0};

config::DayZone offset(int minutes) {
  return config::DayZone{false, minutes};
}

// TZ (a POSIX rule: no tzdata needed) for one test of this process.
class LocalZone {
public:
  explicit LocalZone(const char* rule) {
    ::setenv("TZ", rule, 1);
    ::tzset();
  }
  ~LocalZone() {
    ::unsetenv("TZ");
    ::tzset();
  }
  LocalZone(const LocalZone&) = delete;
  LocalZone& operator=(const LocalZone&) = delete;
};

// Central Europe: +01:00, +02:00 from the last Sunday of March 02:00 to the
// last Sunday of October 03:00 (2026: March 29 and October 25).
constexpr const char* k_berlin_rule = "CET-1CEST,M3.5.0,M10.5.0/3";

config::Limits per_minute(std::uint64_t requests, std::uint64_t tokens = 0) {
  config::Limits limits;
  limits.requests_per_minute = requests;
  limits.tokens_per_minute = tokens;
  return limits;
}

TEST(MinuteWindow, IsTheClockMinuteHoldingNow) {
  Window window = minute_window(utc(2026, 11, 29, 12, 0, 30) + 250ms);
  EXPECT_EQ(window.begins, utc(2026, 11, 29, 12, 0));
  EXPECT_EQ(window.ends, utc(2026, 11, 29, 12, 1));
  EXPECT_TRUE(minute_window(utc(2026, 11, 29, 12, 1)).holds(utc(2026, 11, 29, 12, 1)));
}

TEST(DayWindow, BeginsAtDayStartInAFixedOffset) {
  // 06:00 at +02:00 is 04:00 UTC; 12:00 UTC (14:00 there) is in the day
  // that began this morning.
  Window window = day_window(utc(2026, 11, 29, 12), 6 * 60, offset(120));
  EXPECT_EQ(window.begins, utc(2026, 11, 29, 4));
  EXPECT_EQ(window.ends, utc(2026, 11, 30, 4));
}

TEST(DayWindow, BeforeDayStartIsStillThePreviousDay) {
  Window window = day_window(utc(2026, 11, 29, 3, 59), 6 * 60, offset(120)); // 05:59 there
  EXPECT_EQ(window.begins, utc(2026, 11, 28, 4));
  EXPECT_EQ(window.ends, utc(2026, 11, 29, 4));
}

TEST(DayWindow, NegativeOffsetsAndUtc) {
  // Midnight at -08:00 is 08:00 UTC.
  Window pacific = day_window(utc(2026, 11, 29, 7, 59), 0, offset(-480));
  EXPECT_EQ(pacific.begins, utc(2026, 11, 28, 8));
  EXPECT_EQ(pacific.ends, utc(2026, 11, 29, 8));
  Window in_utc = day_window(utc(2026, 11, 29, 0), 0, k_utc);
  EXPECT_EQ(in_utc.begins, utc(2026, 11, 29, 0));
  EXPECT_EQ(in_utc.ends, utc(2026, 11, 30, 0));
}

TEST(DayWindow, LocalMidnightByDefault) {
  LocalZone zone("<+01>-1");
  Window window = day_window(utc(2026, 11, 29, 12), 0, k_local); // 13:00 local
  EXPECT_EQ(window.begins, utc(2026, 11, 28, 23));
  EXPECT_EQ(window.ends, utc(2026, 11, 29, 23));
}

TEST(DayWindow, ADaylightSavingChangeMakesA23Or25HourDay) {
  LocalZone zone(k_berlin_rule);
  Window spring = day_window(utc(2026, 3, 29, 12), 0, k_local);
  EXPECT_EQ(spring.begins, utc(2026, 3, 28, 23)); // midnight CET
  EXPECT_EQ(spring.ends, utc(2026, 3, 29, 22));   // midnight CEST
  Window autumn = day_window(utc(2026, 10, 25, 12), 0, k_local);
  EXPECT_EQ(autumn.begins, utc(2026, 10, 24, 22));
  EXPECT_EQ(autumn.ends, utc(2026, 10, 25, 23));
}

// A day_start the change skips (02:30 on the spring day) or repeats (02:30
// on the autumn day): every instant around the changes is in a window that
// holds it, 23 to 25 hours long, and the next window starts where it ended.
TEST(DayWindow, DayStartsThatADaylightSavingChangeSkipsOrRepeatsStillTileTime) {
  LocalZone zone(k_berlin_rule);
  for (int day_start : {0, 2 * 60, 2 * 60 + 30, 3 * 60}) {
    for (util::TimePoint from : {utc(2026, 3, 27, 0), utc(2026, 10, 23, 0)}) {
      Window current = day_window(from, day_start, k_local);
      for (util::TimePoint now = from; now < from + 96h; now += 5min) {
        Window window = day_window(now, day_start, k_local);
        ASSERT_TRUE(window.holds(now)) << day_start;
        EXPECT_GE(window.ends - window.begins, 23h) << day_start;
        EXPECT_LE(window.ends - window.begins, 25h) << day_start;
        if (!current.holds(now)) {
          EXPECT_EQ(window.begins, current.ends) << day_start;
          current = window;
        }
      }
    }
  }
}

TEST(BudgetUse, RequestsPerMinuteBlockUntilTheMinuteEnds) {
  BudgetUse use;
  config::Limits limits = per_minute(2);
  util::TimePoint now = utc(2026, 11, 29, 12, 0, 10);
  use.count_request(now, limits);
  EXPECT_FALSE(use.blocked_until(now, limits));
  use.count_request(now + 20s, limits);
  EXPECT_EQ(use.blocked_until(now + 20s, limits), utc(2026, 11, 29, 12, 1));
  EXPECT_EQ(use.blocked_until(utc(2026, 11, 29, 12, 0, 59) + 999ms, limits), utc(2026, 11, 29, 12, 1));
  EXPECT_FALSE(use.blocked_until(utc(2026, 11, 29, 12, 1), limits));
}

TEST(BudgetUse, TokensArriveAfterTheResponseAndMayPassTheLimit) {
  BudgetUse use;
  config::Limits limits = per_minute(0, 1000);
  util::TimePoint now = utc(2026, 11, 29, 12);
  use.count_tokens(now, limits, 999);
  EXPECT_FALSE(use.blocked_until(now, limits));
  use.count_tokens(now, limits, 500);
  EXPECT_EQ(use.blocked_until(now, limits), utc(2026, 11, 29, 12, 1));
  std::vector<LimitUse> uses = use.uses(now, limits);
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_STREQ(uses[0].name, "tokens_per_minute");
  EXPECT_EQ(uses[0].used, 1499u);
  EXPECT_EQ(uses[0].limit, 1000u);
}

TEST(BudgetUse, AKeyAtADailyAndAMinuteLimitIsBackWhenTheDayEnds) {
  BudgetUse use;
  config::Limits limits = per_minute(1);
  limits.requests_per_day = 1;
  limits.day_zone = k_utc;
  util::TimePoint now = utc(2026, 11, 29, 12);
  use.count_request(now, limits);
  EXPECT_EQ(use.blocked_until(now, limits), utc(2026, 11, 30, 0));
  EXPECT_EQ(use.blocked_until(utc(2026, 11, 29, 23, 59, 59), limits), utc(2026, 11, 30, 0));
  EXPECT_FALSE(use.blocked_until(utc(2026, 11, 30, 0), limits));
}

TEST(BudgetUse, UsesListEveryLimitThatIsSetInTheOrderOfTheSettings) {
  BudgetUse use;
  config::Limits limits;
  limits.tokens_per_day = 2'000'000;
  limits.requests_per_minute = 60;
  limits.day_start = 6 * 60;
  limits.day_zone = k_utc;
  util::TimePoint now = utc(2026, 11, 29, 12, 0, 30);
  use.count_request(now, limits);
  use.count_tokens(now, limits, 1200);
  std::vector<LimitUse> uses = use.uses(now, limits);
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_STREQ(uses[0].name, "requests_per_minute");
  EXPECT_STREQ(uses[0].per, "minute");
  EXPECT_EQ(uses[0].used, 1u);
  EXPECT_EQ(uses[0].resets, utc(2026, 11, 29, 12, 1));
  EXPECT_STREQ(uses[1].name, "tokens_per_day");
  EXPECT_STREQ(uses[1].what, "tokens");
  EXPECT_EQ(uses[1].used, 1200u);
  EXPECT_EQ(uses[1].resets, utc(2026, 11, 30, 6));
  EXPECT_TRUE(use.uses(now, config::Limits{}).empty());
}

TEST(BudgetUse, AClockSetBackStartsTheWindowsAgain) {
  BudgetUse use;
  config::Limits limits = per_minute(1);
  util::TimePoint now = utc(2026, 11, 29, 12, 0, 30);
  use.count_request(now, limits);
  EXPECT_TRUE(use.blocked_until(now, limits));
  EXPECT_FALSE(use.blocked_until(now - 1min, limits));
}

TEST(BudgetUse, MovingTheDayStartKeepsTheUseOfTheDaySoFar) {
  BudgetUse use;
  config::Limits limits;
  limits.requests_per_day = 2;
  limits.day_zone = k_utc;
  util::TimePoint now = utc(2026, 11, 29, 12);
  use.count_request(now, limits);
  use.count_request(now, limits);
  limits.day_start = 6 * 60; // a reload: the day now runs from 06:00 UTC
  EXPECT_EQ(use.blocked_until(now, limits), utc(2026, 11, 30, 6));
  limits.day_start = 18 * 60; // now 12:00 is in the day that began yesterday at 18:00
  EXPECT_EQ(use.blocked_until(now, limits), utc(2026, 11, 29, 18));
  EXPECT_FALSE(use.blocked_until(utc(2026, 11, 29, 18), limits));
}

} // namespace
} // namespace keyshim::pool
