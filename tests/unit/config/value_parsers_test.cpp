#include "config/value_parsers.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;

TEST(AuthStyle, ParsesEveryStyleAndPrintsItBack) {
  for (const char* text : {"bearer", "x-api-key", "x-goog-api-key", "api-key", "query:key"}) {
    std::string error;
    std::optional<Auth> auth = parse_auth(text, error);
    ASSERT_TRUE(auth) << text;
    EXPECT_EQ(auth->text(), text);
  }
}

TEST(AuthStyle, QueryKeepsTheParameterName) {
  std::string error;
  EXPECT_EQ(parse_auth("query:api_key", error), (Auth{AuthStyle::query, "api_key"}));
  EXPECT_EQ(parse_auth("x-goog-api-key", error), (Auth{AuthStyle::x_goog_api_key, ""}));
}

TEST(AuthStyle, RejectsUnknownStylesAndListsTheValidOnes) {
  std::string error;
  EXPECT_FALSE(parse_auth("Bearer", error));
  EXPECT_EQ(error, "must be one of bearer, x-api-key, x-goog-api-key, api-key or query:NAME, not "
                   "\"Bearer\"");
}

TEST(AuthStyle, RejectsQueryWithoutAValidName) {
  std::string error;
  EXPECT_FALSE(parse_auth("query:", error));
  EXPECT_FALSE(parse_auth("query:a b", error));
  EXPECT_FALSE(parse_auth("query:a&b", error));
  EXPECT_NE(error.find("query:key"), std::string::npos);
}

TEST(Strategy, ParsesEveryStrategyAndPrintsItBack) {
  for (const char* text : {"ordered", "round-robin", "least-recently-used"}) {
    std::string error;
    std::optional<Strategy> strategy = parse_strategy(text, error);
    ASSERT_TRUE(strategy) << text;
    EXPECT_STREQ(to_string(*strategy), text);
  }
}

TEST(Strategy, RejectsUnknownStrategies) {
  std::string error;
  EXPECT_FALSE(parse_strategy("round_robin", error));
  EXPECT_EQ(error, "must be one of ordered, round-robin or least-recently-used, not \"round_robin\"");
}

TEST(CaptureModeSetting, ParsesEveryModeAndRejectsOthersNamingThem) {
  for (const char* text : {"off", "errors", "all"}) {
    std::string error;
    std::optional<CaptureMode> mode = parse_capture_mode(text, error);
    ASSERT_TRUE(mode) << text;
    EXPECT_STREQ(to_string(*mode), text);
  }
  std::string error;
  EXPECT_FALSE(parse_capture_mode("error", error));
  EXPECT_EQ(error, "must be one of off, errors or all, not \"error\"");
}

TEST(Size, ReadsBytesAndBinaryUnits) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("512KiB"), 512u * 1024);
  EXPECT_EQ(parse_size("64MiB"), 64u * 1024 * 1024);
  EXPECT_EQ(parse_size("1GiB"), 1024ull * 1024 * 1024);
}

TEST(Size, RejectsOtherUnitsAndGarbage) {
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("MiB"));
  EXPECT_FALSE(parse_size("64MB"));
  EXPECT_FALSE(parse_size("64 MiB"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("1.5MiB"));
  EXPECT_FALSE(parse_size("99999999999999999999GiB"));
  EXPECT_FALSE(parse_size("9999999999999GiB"));
}

TEST(Label, AcceptsLettersDigitsAndSafePunctuation) {
  EXPECT_EQ(label_problem("personal"), "");
  EXPECT_EQ(label_problem("team-2_a.b@c+d/e~f"), "");
}

TEST(Label, RejectsEmptyLongAndUnsafeLabels) {
  EXPECT_NE(label_problem("").find("is empty"), std::string::npos);
  EXPECT_NE(label_problem(std::string(65, 'a')).find("longer than 64"), std::string::npos);
  EXPECT_NE(label_problem("my key").find("may only contain"), std::string::npos);
  EXPECT_NE(label_problem("a=b").find("may only contain"), std::string::npos);
  EXPECT_NE(label_problem("a\nb").find("may only contain"), std::string::npos);
}

TEST(KeyMaterial, AcceptsPrintableAscii) {
  EXPECT_EQ(key_material_problem("sk-abc_123.XYZ"), "");
}

TEST(KeyMaterial, RejectsWhatCannotTravelInAHeaderWithoutEchoingIt) {
  EXPECT_EQ(key_material_problem(""), "is empty");
  for (const char* bad : {"sk-a b", "sk-a\r\nX-Evil: 1", "sk-\x01", "sk-\xc3\xa9"}) {
    std::string problem = key_material_problem(bad);
    EXPECT_NE(problem.find("cannot be sent in an HTTP header"), std::string::npos);
    EXPECT_EQ(problem.find("sk-"), std::string::npos);
  }
}

TEST(Count, TakesWholeNumbersAndThousandsMillionsBillions) {
  EXPECT_EQ(parse_count("60"), 60u);
  EXPECT_EQ(parse_count("200K"), 200'000u);
  EXPECT_EQ(parse_count("200k"), 200'000u);
  EXPECT_EQ(parse_count("2M"), 2'000'000u);
  EXPECT_EQ(parse_count("1.5M"), 1'500'000u);
  EXPECT_EQ(parse_count("0.25K"), 250u);
  EXPECT_EQ(parse_count("3G"), 3'000'000'000u);
}

TEST(Count, RefusesWhatIsNotAWholeCount) {
  for (const char* text : {"", "K", "1.5", "0.0001K", "2MB", "2m", "60/min", "-1", "1e6", "1.", ".5M",
                           "1,000", " 60", "99999999999999999999", "20000000000G"}) {
    EXPECT_FALSE(parse_count(text)) << text;
  }
}

TEST(TimeOfDay, IsHoursAndMinutesFromMidnight) {
  EXPECT_EQ(parse_time_of_day("00:00"), 0);
  EXPECT_EQ(parse_time_of_day("06:30"), 390);
  EXPECT_EQ(parse_time_of_day("23:59"), 1439);
  for (const char* text : {"24:00", "6:30", "06:60", "0630", "06:30:00", "", "noon"}) {
    EXPECT_FALSE(parse_time_of_day(text)) << text;
  }
}

TEST(DayZone, IsLocalUtcOrAnOffsetAndPrintsItBack) {
  for (const char* text : {"local", "UTC", "+02:00", "-08:00", "+05:45", "+14:00"}) {
    std::string error;
    std::optional<DayZone> zone = parse_day_zone(text, error);
    ASSERT_TRUE(zone) << text << ": " << error;
    EXPECT_EQ(zone->text(), text);
  }
  std::string error;
  EXPECT_EQ(parse_day_zone("-08:00", error), (DayZone{false, -480}));
  EXPECT_EQ(parse_day_zone("utc", error), (DayZone{false, 0}));
  EXPECT_EQ(parse_day_zone("+00:00", error)->text(), "UTC");
}

TEST(DayZone, RefusesNamesAndOffsetsBeyondFourteenHours) {
  for (const char* text : {"+15:00", "02:00", "+2", "CET", "Local", ""}) {
    std::string error;
    EXPECT_FALSE(parse_day_zone(text, error)) << text;
    EXPECT_NE(error.find("\"local\""), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(parse_day_zone("Europe/Berlin", error));
  EXPECT_NE(error.find("zone names are not read: write its offset"), std::string::npos) << error;
}
