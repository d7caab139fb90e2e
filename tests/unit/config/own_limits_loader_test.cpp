// Limits of one's own in the pool file: a pool's values are each key's
// default, a key's own override them, and the day is the pool's.
#include "config/loader.hpp"
#include "unit/config/load_text.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;
using keyshim::config::test_support::load;
using keyshim::config::test_support::load_ok;
using keyshim::config::test_support::problems;

namespace {

constexpr const char* k_limits = R"([upstream]
requests_per_minute = 60
tokens_per_day = "2M"
day_start = "06:00"
day_zone = "-08:00"

[[keys]]
label = "pooled"
key = "sk-limits-one"

[[keys]]
label = "own"
key = "sk-limits-two"
requests_per_minute = "1K"
requests_per_day = 5000
tokens_per_minute = "1.5M"

[pools.free]
base_url = "https://api.example.com"

[[pools.free.keys]]
label = "unlimited"
key = "sk-limits-three"
)";

} // namespace

TEST(OwnLimits, APoolsLimitsAreEachKeysDefaultAndAKeyOverridesThem) {
  Config config = load_ok(k_limits);
  ASSERT_EQ(config.pools.size(), 2u);
  const Limits& pooled = config.pools[0].keys[0].limits;
  EXPECT_EQ(pooled.requests_per_minute, 60u);
  EXPECT_EQ(pooled.requests_per_day, 0u);
  EXPECT_EQ(pooled.tokens_per_minute, 0u);
  EXPECT_EQ(pooled.tokens_per_day, 2'000'000u);
  EXPECT_EQ(pooled.day_start, 6 * 60);
  EXPECT_EQ(pooled.day_zone, (DayZone{false, -480}));
  const Limits& own = config.pools[0].keys[1].limits;
  EXPECT_EQ(own.requests_per_minute, 1000u);
  EXPECT_EQ(own.requests_per_day, 5000u);
  EXPECT_EQ(own.tokens_per_minute, 1'500'000u);
  EXPECT_EQ(own.tokens_per_day, 2'000'000u); // the pool's
  EXPECT_EQ(own.day_start, 6 * 60);
}

TEST(OwnLimits, NoneByDefaultAndTheDayIsLocalMidnight) {
  Config config = load_ok(k_limits);
  const Limits& limits = config.pools[1].keys[0].limits;
  EXPECT_FALSE(limits.any());
  EXPECT_EQ(limits.day_start, 0);
  EXPECT_TRUE(limits.day_zone.local);
}

TEST(OwnLimits, BadValuesAreErrorsThatSayWhatToWrite) {
  const std::string key = "\n[[keys]]\nkey = \"sk-limits-bad\"\n";
  EXPECT_EQ(problems("[upstream]\nrequests_per_minute = \"60/min\"\n" + key),
            "keys.toml:2:23: upstream: \"requests_per_minute\" must be a count like 60, \"200K\" or \"2M\" "
            "(K, M, G: thousands, millions, billions), not \"60/min\"\n");
  EXPECT_EQ(problems("[upstream]\ntokens_per_day = 0\n" + key),
            "keys.toml:2:18: upstream: \"tokens_per_day\" must be at least 1; remove it for no limit\n");
  EXPECT_EQ(problems("[upstream]\ntokens_per_day = 1.5\n" + key),
            "keys.toml:2:18: upstream: \"tokens_per_day\" must be a count like 60, \"200K\" or \"2M\" (K, M, "
            "G: thousands, millions, billions), not a float\n");
  EXPECT_EQ(problems("[upstream]\nday_start = \"24:00\"\n" + key),
            "keys.toml:2:13: upstream: \"day_start\" must be a time of day \"HH:MM\" from \"00:00\" to "
            "\"23:59\", not \"24:00\"\n");
  EXPECT_NE(problems("[upstream]\nday_zone = \"America/Los_Angeles\"\n" + key).find("write its offset"),
            std::string::npos);
  EXPECT_NE(
      problems("[[keys]]\nkey = \"sk-limits-bad\"\nday_zone = \"UTC\"\n").find("it belongs in [upstream]"),
      std::string::npos);
  EXPECT_NE(
      problems("[upstream]\nrequest_per_minute = 5\n" + key).find("did you mean \"requests_per_minute\"?"),
      std::string::npos);
}
