// When a key_cmd key's command runs again, and which token requests send
// meanwhile: the schedule of pool::Credential, on made-up times.
#include "pool/credential.hpp"

#include <gtest/gtest.h>

using namespace keyshim;
using namespace std::chrono;
using pool::Credential;

namespace {

const util::TimePoint k_start = util::TimePoint(sys_days(year{2026} / December / 2) + hours(18));

config::KeyCommand command(std::optional<milliseconds> refresh, std::optional<util::TimePoint> expires) {
  return config::KeyCommand{{"token-command"}, refresh, expires};
}

} // namespace

TEST(Credential, ABareTokenWithoutARefreshSettingRunsOnlyAfterA401) {
  Credential token(util::Secret("tok-1"), command(std::nullopt, std::nullopt), k_start);
  EXPECT_FALSE(token.due());
  EXPECT_TRUE(token.valid(k_start + hours(100)));
  EXPECT_TRUE(token.reject(token.generation(), k_start + hours(1)));
  EXPECT_FALSE(token.valid(k_start + hours(1)));
  EXPECT_EQ(token.due(), k_start + hours(1));
}

TEST(Credential, RunsAfterTheRefreshSetting) {
  Credential token(util::Secret("tok-1"), command(minutes(50), std::nullopt), k_start);
  EXPECT_EQ(token.due(), k_start + minutes(50));
  EXPECT_FALSE(token.start(k_start + minutes(49)));
  EXPECT_TRUE(token.start(k_start + minutes(50)));
  EXPECT_FALSE(token.start(k_start + minutes(50))) << "one run at a time";
  token.succeed(util::Secret("tok-2"), std::nullopt, k_start + minutes(50));
  EXPECT_EQ(token.token()->reveal(), "tok-2");
  EXPECT_EQ(token.generation(), 2u);
  EXPECT_EQ(token.due(), k_start + minutes(100));
}

TEST(Credential, RunsAheadOfTheReportedExpiry) {
  // An hour-long token: 5 minutes ahead. A 2-second one: a quarter ahead.
  Credential hour(util::Secret("tok"), command(std::nullopt, k_start + hours(1)), k_start);
  EXPECT_EQ(hour.due(), k_start + minutes(55));
  Credential brief(util::Secret("tok"), command(std::nullopt, k_start + seconds(2)), k_start);
  EXPECT_EQ(brief.due(), k_start + milliseconds(1500));
  // key_cmd_refresh wins when it comes first.
  Credential both(util::Secret("tok"), command(minutes(30), k_start + hours(1)), k_start);
  EXPECT_EQ(both.due(), k_start + minutes(30));
}

TEST(Credential, TheOldTokenServesUntilItExpiresThenNoTokenIsValid) {
  Credential token(util::Secret("tok-1"), command(std::nullopt, k_start + hours(1)), k_start);
  ASSERT_TRUE(token.start(k_start + minutes(55)));
  EXPECT_TRUE(token.valid(k_start + minutes(59))) << "requests keep the old token during the run";
  EXPECT_FALSE(token.valid(k_start + hours(1)));
}

TEST(Credential, AFailedRunIsRetriedWithBackoffButBeforeTheTokenDies) {
  Credential token(util::Secret("tok-1"), command(std::nullopt, k_start + hours(1)), k_start);
  util::TimePoint now = k_start + minutes(55);
  ASSERT_TRUE(token.start(now));
  EXPECT_EQ(token.fail("key_cmd: ERROR: offline", now), seconds(5));
  EXPECT_EQ(token.error(), "key_cmd: ERROR: offline");
  EXPECT_TRUE(token.valid(now));
  now += seconds(5);
  ASSERT_TRUE(token.start(now));
  EXPECT_EQ(token.fail("again", now), seconds(10));
  for (int i = 0; i < 4; ++i) { // 20 s, 40 s, 80 s, then 160 s would pass the expiry
    now = *token.due();
    ASSERT_TRUE(token.start(now));
    token.fail("again", now);
  }
  EXPECT_EQ(token.due(), k_start + hours(1)) << "the last chance is the expiry, not after it";
  now = *token.due();
  ASSERT_TRUE(token.start(now));
  EXPECT_EQ(token.fail("again", now), minutes(5)) << "the backoff stops growing at 5 minutes";
  token.succeed(util::Secret("tok-2"), now + hours(1), now);
  EXPECT_EQ(token.error(), "");
  EXPECT_TRUE(token.valid(now));
}

TEST(Credential, A401OnAReplacedTokenAsksForNoRun) {
  Credential token(util::Secret("tok-1"), command(minutes(50), std::nullopt), k_start);
  std::uint64_t first = token.generation();
  ASSERT_TRUE(token.start(k_start + minutes(50)));
  token.succeed(util::Secret("tok-2"), std::nullopt, k_start + minutes(50));
  EXPECT_FALSE(token.reject(first, k_start + minutes(51)));
  EXPECT_TRUE(token.valid(k_start + minutes(51)));
}

TEST(Credential, RunsAreASecondApartWhateverTheOutputSays) {
  // A command reporting an expiry of "now" must not run in a loop.
  Credential token(util::Secret("tok-1"), command(std::nullopt, k_start), k_start);
  ASSERT_TRUE(token.start(k_start));
  token.succeed(util::Secret("tok-2"), k_start, k_start);
  EXPECT_EQ(token.due(), k_start + seconds(1));
  EXPECT_TRUE(token.reject(token.generation(), k_start + milliseconds(100)));
  EXPECT_EQ(token.due(), k_start + seconds(1));
}

TEST(Credential, TheSameTokenAgainKeepsItsGeneration) {
  Credential token(util::Secret("tok-1"), command(std::nullopt, std::nullopt), k_start);
  ASSERT_TRUE(token.reject(1, k_start));
  ASSERT_TRUE(token.start(k_start));
  token.succeed(util::Secret("tok-1"), std::nullopt, k_start);
  EXPECT_EQ(token.generation(), 1u);
  EXPECT_TRUE(token.valid(k_start));
  EXPECT_EQ(token.refreshes(), 1u);
}

TEST(Credential, AReloadsRunTakesOverTokenAndSchedule) {
  Credential token(util::Secret("tok-1"), command(minutes(50), std::nullopt), k_start);
  ASSERT_TRUE(token.start(k_start + minutes(50)));
  token.fail("offline", k_start + minutes(50));
  token.adopt(util::Secret("tok-9"), command(minutes(20), std::nullopt), k_start + minutes(51));
  EXPECT_EQ(token.token()->reveal(), "tok-9");
  EXPECT_EQ(token.error(), "");
  EXPECT_EQ(token.due(), k_start + minutes(71));
}
