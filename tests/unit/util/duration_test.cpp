#include "util/duration.hpp"

#include <gtest/gtest.h>

using keyshim::util::format_duration;
using keyshim::util::parse_duration;
using std::chrono::milliseconds;

TEST(ParseDuration, ReadsEachUnit) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("10s"), milliseconds(10'000));
  EXPECT_EQ(parse_duration("5m"), milliseconds(300'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("2d"), milliseconds(172'800'000));
}

TEST(ParseDuration, ReadsFractionsAndCombinations) {
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
}

TEST(ParseDuration, RejectsTextThatIsNotADuration) {
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("10"));
  EXPECT_FALSE(parse_duration("s"));
  EXPECT_FALSE(parse_duration("10 s"));
  EXPECT_FALSE(parse_duration("10seconds"));
  EXPECT_FALSE(parse_duration("-5s"));
  EXPECT_FALSE(parse_duration("1.2.3s"));
  EXPECT_FALSE(parse_duration(".s"));
}

TEST(ParseDuration, RejectsAbsurdlyLargeValues) {
  EXPECT_FALSE(parse_duration("999999999999d"));
}

TEST(FormatDuration, UsesMillisecondsBelowOneSecond) {
  EXPECT_EQ(format_duration(milliseconds(412)), "412ms");
  EXPECT_EQ(format_duration(milliseconds(0)), "0ms");
}

TEST(FormatDuration, UsesOneDecimalBelowTenSeconds) {
  EXPECT_EQ(format_duration(milliseconds(8100)), "8.1s");
}

TEST(FormatDuration, UsesAtMostTwoUnits) {
  EXPECT_EQ(format_duration(milliseconds(18'000)), "18s");
  EXPECT_EQ(format_duration(milliseconds(365'000)), "6m 5s");
  EXPECT_EQ(format_duration(milliseconds(300'000)), "5m");
  EXPECT_EQ(format_duration(milliseconds((6 * 3600 + 12 * 60 + 9) * 1000LL)), "6h 12m");
  EXPECT_EQ(format_duration(milliseconds(3'600'000)), "1h");
  EXPECT_EQ(format_duration(milliseconds((3 * 86400 + 4 * 3600) * 1000LL)), "3d 4h");
  EXPECT_EQ(format_duration(milliseconds(86'400'000)), "1d");
}

TEST(FormatDuration, ShowsNegativeDurationsAsZero) {
  EXPECT_EQ(format_duration(milliseconds(-5)), "0ms");
}

TEST(FormatDuration, RoundTripsThroughParseForWholeUnits) {
  for (const char* text : {"5m", "1h", "18s", "412ms"}) {
    EXPECT_EQ(format_duration(*parse_duration(text)), text);
  }
}
