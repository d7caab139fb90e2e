// What key_cmd prints: the bare line of `pass show` and `gcloud auth
// print-access-token`, and the JSON of az, OAuth token endpoints and
// gcloud's config-helper, with the expiry each reports.
#include "config/token_output.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

using namespace keyshim::config;
using namespace std::chrono;
using keyshim::util::TimePoint;

namespace {

// 2026-12-02T18:00:00Z
const TimePoint k_now = TimePoint(sys_days(year{2026} / December / 2) + hours(18));

TokenOutput read_ok(std::string_view output) {
  std::string problem;
  std::optional<TokenOutput> read = read_token_output(output, k_now, problem);
  EXPECT_TRUE(read) << problem;
  return read ? std::move(*read) : TokenOutput{};
}

std::string problem_of(std::string_view output) {
  std::string problem;
  EXPECT_FALSE(read_token_output(output, k_now, problem));
  return problem;
}

// Runs a test body with TZ set, restoring the previous zone afterwards.
class WithZone {
public:
  explicit WithZone(const char* zone) {
    const char* before = std::getenv("TZ");
    m_before = before ? std::optional<std::string>(before) : std::nullopt;
    ::setenv("TZ", zone, 1);
    ::tzset();
  }
  ~WithZone() {
    if (m_before) {
      ::setenv("TZ", m_before->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  WithZone(const WithZone&) = delete;
  WithZone& operator=(const WithZone&) = delete;

private:
  std::optional<std::string> m_before;
};

} // namespace

TEST(TokenOutput, ABareLineIsTheKeyWithoutAnExpiry) {
  TokenOutput read = read_ok("ya29.bare-token\nmetadata: ignored\n");
  EXPECT_EQ(read.token.reveal(), "ya29.bare-token");
  EXPECT_FALSE(read.expires);
}

TEST(TokenOutput, AzJsonGivesTheTokenAndItsExpiry) {
  WithZone zone("UTC0");
  // `az account get-access-token -o json` (azure-cli 2.54 and later).
  TokenOutput read = read_ok(R"({
  "accessToken": "eyJ0eXAi.az-token",
  "expiresOn": "2026-12-02 19:00:00.000000",
  "expires_on": 1796238000,
  "subscription": "0b1f6471-1bf0-4dda-aec3-cb9272f09590",
  "tenant": "54826b22-38d6-4fb2-bad9-b7b93a3e9c5a",
  "tokenType": "Bearer"
})");
  EXPECT_EQ(read.token.reveal(), "eyJ0eXAi.az-token");
  EXPECT_EQ(read.expires, k_now + hours(1));
}

TEST(TokenOutput, AzLocalExpiresOnIsReadInTheLocalZone) {
  WithZone zone("UTC+2"); // POSIX: two hours west of UTC
  TokenOutput read = read_ok(R"({"accessToken": "az-old-cli", "expiresOn": "2026-12-02 19:00:00.000000"})");
  ASSERT_TRUE(read.expires);
  EXPECT_EQ(*read.expires, k_now + hours(3)); // 19:00 at UTC-2 is 21:00Z
}

TEST(TokenOutput, OAuthExpiresInCountsFromNow) {
  TokenOutput read = read_ok(R"({"access_token":"oauth-token","token_type":"Bearer","expires_in":3599})");
  EXPECT_EQ(read.token.reveal(), "oauth-token");
  EXPECT_EQ(read.expires, k_now + seconds(3599));
  EXPECT_EQ(read_ok(R"({"access_token":"t","expires_in":"120"})").expires, k_now + seconds(120));
}

TEST(TokenOutput, GcloudJsonFormsAreRead) {
  // `gcloud auth print-access-token --format=json`: the token alone.
  TokenOutput print = read_ok(R"({"token": "ya29.print"})");
  EXPECT_EQ(print.token.reveal(), "ya29.print");
  EXPECT_FALSE(print.expires);
  // `gcloud config config-helper --format=json`: nested, with an RFC 3339 expiry.
  TokenOutput helper = read_ok(R"({"configuration": {"active_configuration": "default"},
    "credential": {"access_token": "ya29.helper", "id_token": "eyJ.id", "token_expiry": "2026-12-02T18:59:30Z"},
    "sentinels": {"config_sentinel": "/home/u/.config/gcloud/config_sentinel"}})");
  EXPECT_EQ(helper.token.reveal(), "ya29.helper");
  EXPECT_EQ(helper.expires, k_now + minutes(59) + seconds(30));
}

TEST(TokenOutput, TheEarliestOfSeveralExpiriesWins) {
  TokenOutput read = read_ok(R"({"token":"t","expires_in":600,"expiry":"2026-12-02T18:05:00+00:00"})");
  EXPECT_EQ(read.expires, k_now + minutes(5));
}

TEST(TokenOutput, AnExpiryInThePastIsNowAndAHugeOneIsAYear) {
  EXPECT_EQ(read_ok(R"({"token":"t","expires_in":-5})").expires, k_now);
  EXPECT_EQ(read_ok(R"({"token":"t","expires_in":1e300})").expires, k_now + hours(24 * 366));
  EXPECT_EQ(read_ok(R"({"token":"t","expiry":"9999-12-31T23:59:59Z"})").expires, k_now + hours(24 * 366));
  // Milliseconds since the epoch, a JavaScript habit.
  EXPECT_EQ(read_ok(R"({"token":"t","expires_on":1796234400000})").expires, k_now);
}

TEST(TokenOutput, JsonWithoutATokenIsNamedWithoutEchoingIt) {
  EXPECT_EQ(problem_of(R"({"accessTokn": "SECRET-value"})"),
            "JSON without a token (a string \"access_token\", \"accessToken\" or \"token\")");
  EXPECT_EQ(problem_of(R"({"token": ""})"),
            "JSON without a token (a string \"access_token\", \"accessToken\" or \"token\")");
}

TEST(TokenOutput, BrokenJsonIsAProblemNotAKey) {
  std::string problem = problem_of(R"({"token": "SECRET-value)");
  EXPECT_EQ(problem.rfind("JSON keyshim cannot read (", 0), 0u) << problem;
  EXPECT_EQ(problem.find("SECRET"), std::string::npos) << problem;
  std::string deep;
  for (int i = 0; i < 100; ++i) {
    deep += "{\"a\":";
  }
  EXPECT_EQ(problem_of(deep).rfind("JSON keyshim cannot read (nesting too deep", 0), 0u) << problem_of(deep);
}

TEST(TokenOutput, AnExpiryThatCannotBeReadIsAProblem) {
  EXPECT_EQ(
      problem_of(R"({"token":"t","expiresOn":"next tuesday"})").rfind("an expiry keyshim cannot read", 0),
      0u);
  // One readable expiry is enough: old az printed "N/A" beside a good one.
  EXPECT_EQ(read_ok(R"({"token":"t","expiresOn":"N/A","expires_in":60})").expires, k_now + seconds(60));
  EXPECT_FALSE(read_ok(R"({"token":"t","expiresOn":null})").expires);
}

TEST(TokenOutput, ATokenUnfitForAHeaderIsRefused) {
  EXPECT_EQ(problem_of("{\"token\": \"SECRET with space\"}"),
            "a token that contains whitespace, control or non-ASCII characters, which cannot be sent in an "
            "HTTP header");
  EXPECT_EQ(problem_of("\n\n"), "nothing");
}

TEST(ExpiryTime, ReadsRfc3339WithFractionAndOffset) {
  EXPECT_EQ(parse_expiry_time("2026-12-02T18:00:00Z"), k_now);
  EXPECT_EQ(parse_expiry_time("2026-12-02t18:00:00.123456z"), k_now);
  EXPECT_EQ(parse_expiry_time("2026-12-02T20:30:00+02:30"), k_now);
  EXPECT_EQ(parse_expiry_time("2026-12-02T17:00:00-01:00"), k_now);
}

TEST(ExpiryTime, RefusesWhatIsNotADate) {
  for (const char* bad :
       {"", "2026-12-02", "2026-02-30T10:00:00Z", "2026-12-02T24:00:00Z", "2026-12-02T18:00:00+2",
        "2026-12-02T18:00:00.Z", "2026-12-02X18:00:00Z", "20x6-12-02T18:00:00Z", "2026-12-02T18:00:00 UTC"}) {
    EXPECT_FALSE(parse_expiry_time(bad)) << bad;
  }
}

TEST(FirstErrorLine, TakesTheFirstNonBlankLineFitToShow) {
  EXPECT_EQ(
      first_error_line("\n  \nERROR: (gcloud.auth.print-access-token) Reauthentication failed.\nmore\n"),
      "ERROR: (gcloud.auth.print-access-token) Reauthentication failed.");
  EXPECT_EQ(first_error_line("bell\a and\tescape\x1b[31m\r\n"), "bell  and escape [31m");
  EXPECT_EQ(first_error_line(""), "");
  EXPECT_EQ(first_error_line("abcdefghij", 4), "abcd...");
  EXPECT_EQ(first_error_line("ab\xc3\xa9", 3), "ab..."); // never half of "é"
}
