// Where a wait comes from: headers first, then the body, then daily quotas.
#include "policy/retry_hints.hpp"

#include "policy_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::policy {
namespace {

using namespace std::chrono_literals;
using test::provider_body;

class RetryHintsTest : public ::testing::Test {
protected:
  std::optional<RetryHint> hint(std::vector<Header> headers, std::string_view body = {}) {
    return find_retry_hint(headers, body, m_clock.now());
  }

  test::FakeClock m_clock; // 2026-11-29T12:00:00Z, a Sunday
};

TEST_F(RetryHintsTest, NoHintAnywhereIsNullopt) {
  EXPECT_FALSE(hint({}, ""));
  EXPECT_FALSE(hint({{"Content-Type", "application/json"}}, R"({"error":{"message":"slow down"}})"));
}

TEST_F(RetryHintsTest, RetryAfterSeconds) {
  auto h = hint({{"Retry-After", "120"}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->wait, 120s);
  EXPECT_EQ(h->source, "Retry-After");
}

TEST_F(RetryHintsTest, HeaderNamesAreCaseInsensitiveAndValuesTrimmed) {
  EXPECT_EQ(hint({{"RETRY-AFTER", " 7 "}})->wait, 7s);
  EXPECT_EQ(hint({{"retry-after", "7"}})->wait, 7s);
  EXPECT_EQ(hint({{"X-RateLimit-Reset-Requests", "2s"}})->wait, 2s);
}

TEST_F(RetryHintsTest, RetryAfterFractionalSecondsAreAccepted) {
  EXPECT_EQ(hint({{"Retry-After", "1.5"}})->wait, 1500ms);
}

TEST_F(RetryHintsTest, RetryAfterImfFixdate) {
  auto h = hint({{"Retry-After", "Sun, 29 Nov 2026 12:05:30 GMT"}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->wait, 330s);
  EXPECT_EQ(h->source, "Retry-After");
}

TEST_F(RetryHintsTest, RetryAfterRfc850Date) {
  EXPECT_EQ(hint({{"Retry-After", "Sunday, 29-Nov-26 12:01:00 GMT"}})->wait, 60s);
}

TEST_F(RetryHintsTest, RetryAfterAsctimeDate) {
  EXPECT_EQ(hint({{"Retry-After", "Sun Nov 29 13:00:00 2026"}})->wait, 1h);
}

TEST_F(RetryHintsTest, RetryAfterDateInThePastIsZeroWait) {
  EXPECT_EQ(hint({{"Retry-After", "Sat, 28 Nov 2026 12:00:00 GMT"}})->wait, 0ms);
}

TEST_F(RetryHintsTest, UnparsableRetryAfterFallsThroughToTheNextSource) {
  auto h = hint({{"Retry-After", "soon"}, {"retry-after-ms", "250"}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->wait, 250ms);
  EXPECT_EQ(h->source, "retry-after-ms");
  EXPECT_FALSE(hint({{"Retry-After", "-5"}}));
  EXPECT_FALSE(hint({{"Retry-After", "99999999999999999999999999999999999999999999999999"}}));
}

TEST_F(RetryHintsTest, RetryAfterOutranksEveryOtherSource) {
  auto h = hint({{"x-ratelimit-reset-requests", "6m0s"}, {"retry-after-ms", "900"}, {"Retry-After", "3"}},
                "Please retry in 40s");
  EXPECT_EQ(h->wait, 3s);
}

TEST_F(RetryHintsTest, RetryAfterMs) {
  EXPECT_EQ(hint({{"retry-after-ms", "1500"}})->wait, 1500ms);
  EXPECT_EQ(hint({{"retry-after-ms", "20.4"}})->wait, 20ms);
}

TEST_F(RetryHintsTest, OpenAIResetDurations) {
  const std::pair<const char*, std::chrono::milliseconds> cases[] = {
      {"6m0s", 360s},          {"1s", 1s},      {"20ms", 20ms},
      {"1h2m3.5s", 3723500ms}, {"0.5s", 500ms}, {"17.087s", 17087ms},
  };
  for (const auto& [text, wait] : cases) {
    auto h = hint({{"x-ratelimit-reset-requests", text}});
    ASSERT_TRUE(h) << text;
    EXPECT_EQ(h->wait, wait) << text;
    EXPECT_EQ(h->source, "x-ratelimit-reset-requests");
  }
}

TEST_F(RetryHintsTest, OpenAIResetOfTheExhaustedLimitWins) {
  auto h = hint({{"x-ratelimit-remaining-requests", "4999"},
                 {"x-ratelimit-reset-requests", "12ms"},
                 {"x-ratelimit-remaining-tokens", "0"},
                 {"x-ratelimit-reset-tokens", "6s"}});
  EXPECT_EQ(h->wait, 6s);
  EXPECT_EQ(h->source, "x-ratelimit-reset-tokens");

  h = hint({{"x-ratelimit-remaining-requests", "0"},
            {"x-ratelimit-reset-requests", "1s"},
            {"x-ratelimit-remaining-tokens", "150000"},
            {"x-ratelimit-reset-tokens", "6m0s"}});
  EXPECT_EQ(h->wait, 1s);
  EXPECT_EQ(h->source, "x-ratelimit-reset-requests");
}

TEST_F(RetryHintsTest, OpenAIBothLimitsExhaustedWaitsForTheLonger) {
  auto h = hint({{"x-ratelimit-remaining-requests", "0"},
                 {"x-ratelimit-reset-requests", "2s"},
                 {"x-ratelimit-remaining-tokens", "0"},
                 {"x-ratelimit-reset-tokens", "9s"}});
  EXPECT_EQ(h->wait, 9s);
}

TEST_F(RetryHintsTest, OpenAINoLimitReportedExhaustedWaitsForTheLonger) {
  auto h = hint({{"x-ratelimit-remaining-requests", "10"},
                 {"x-ratelimit-reset-requests", "2s"},
                 {"x-ratelimit-remaining-tokens", "100"},
                 {"x-ratelimit-reset-tokens", "9s"}});
  EXPECT_EQ(h->wait, 9s);
  EXPECT_EQ(hint({{"x-ratelimit-reset-requests", "4s"}, {"x-ratelimit-reset-tokens", "3s"}})->wait, 4s);
}

TEST_F(RetryHintsTest, OpenAICompatibleResetAsSecondsOrEpoch) {
  EXPECT_EQ(hint({{"x-ratelimit-reset-requests", "30"}})->wait, 30s);
  auto epoch =
      std::chrono::duration_cast<std::chrono::seconds>(m_clock.now().time_since_epoch()).count() + 90;
  EXPECT_EQ(hint({{"x-ratelimit-reset-requests", std::to_string(epoch)}})->wait, 90s);
}

TEST_F(RetryHintsTest, EpochResetsPastTheClockRangeAreLongWaitsNotWrapped) {
  // Seconds of year ~31700 and milliseconds of year ~318000: beyond 2262 in nanoseconds.
  for (const char* reset : {"999999999999", "9999999999999999", "99999999999999999999999999999999"}) {
    auto h = hint({{"x-ratelimit-reset-requests", reset}});
    ASSERT_TRUE(h) << reset;
    EXPECT_GT(h->wait, std::chrono::hours(24 * 365 * 1000)) << reset;
  }
}

TEST_F(RetryHintsTest, AnthropicResetTimestamps) {
  for (const char* kind : {"requests", "tokens", "input-tokens", "output-tokens"}) {
    std::string name = std::string("anthropic-ratelimit-") + kind + "-reset";
    auto h = hint({{name, "2026-11-29T12:00:42Z"}});
    ASSERT_TRUE(h) << name;
    EXPECT_EQ(h->wait, 42s) << name;
    EXPECT_EQ(h->source, name);
  }
}

TEST_F(RetryHintsTest, AnthropicExhaustedLimitWins) {
  auto h = hint({{"anthropic-ratelimit-requests-remaining", "49"},
                 {"anthropic-ratelimit-requests-reset", "2026-11-29T12:00:59Z"},
                 {"anthropic-ratelimit-output-tokens-remaining", "0"},
                 {"anthropic-ratelimit-output-tokens-reset", "2026-11-29T12:00:07.500Z"}});
  EXPECT_EQ(h->wait, 7500ms);
  EXPECT_EQ(h->source, "anthropic-ratelimit-output-tokens-reset");
}

TEST_F(RetryHintsTest, ProviderHeadersOutrankTheBody) {
  auto h = hint({{"anthropic-ratelimit-tokens-reset", "2026-11-29T12:00:10Z"}}, "please retry in 99s");
  EXPECT_EQ(h->wait, 10s);
}

TEST_F(RetryHintsTest, BodyPhrases) {
  const std::pair<const char*, std::chrono::milliseconds> cases[] = {
      {"Please retry in 12.5s.", 12500ms},
      {"Rate limited. Try again in 20s", 20s},
      {"please RETRY AFTER 3 seconds", 3s},
      {"try again in 6m0s.", 360s},
      {"Please try again in 120ms.", 120ms},
      {"try again in 2 minutes", 120s},
      {"retry after 1 hour", 1h},
      {"Please try again in 1.5 sec", 1500ms},
      {"try again in 45sec.", 45s},
  };
  for (const auto& [body, wait] : cases) {
    auto h = hint({}, body);
    ASSERT_TRUE(h) << body;
    EXPECT_EQ(h->wait, wait) << body;
    EXPECT_EQ(h->source, "body") << body;
  }
}

TEST_F(RetryHintsTest, PhrasesWithoutADurationAreNotHints) {
  EXPECT_FALSE(hint({}, "please try again later"));
  EXPECT_FALSE(hint({}, "retry in a moment"));
  EXPECT_FALSE(hint({}, "try again in 5 fortnights"));
}

TEST_F(RetryHintsTest, LaterPhraseIsUsedWhenTheFirstHasNoDuration) {
  EXPECT_EQ(hint({}, "retry in a bit, or retry in 4s")->wait, 4s);
}

TEST_F(RetryHintsTest, OpenAIRateLimitBodyHint) {
  auto h = hint({}, provider_body("openai_429_rate_limit.json"));
  EXPECT_EQ(h->wait, 1924ms);
  EXPECT_EQ(h->source, "body");
}

TEST_F(RetryHintsTest, OpenAIRequestsPerDayWithAWaitUsesTheWait) {
  // OpenAI limits replenish continuously: its "try again in" is accurate even for RPD.
  auto h = hint({}, provider_body("openai_429_requests_per_day.json"));
  EXPECT_EQ(h->wait, 8640ms);
}

TEST_F(RetryHintsTest, GeminiRetryDelay) {
  auto h = hint({}, provider_body("gemini_429_per_minute.json"));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->wait, 17s);
  EXPECT_EQ(h->source, "retryDelay");
  EXPECT_EQ(hint({}, R"({"retryDelay":"0.5s"})")->wait, 500ms);
  EXPECT_EQ(hint({}, R"({"retryDelay" : "1.000340s"})")->wait, 1000ms);
}

TEST_F(RetryHintsTest, GeminiPerDayQuotaOutranksItsShortRetryDelay) {
  // Gemini says "retry in 38s" even when the day's quota is gone.
  auto h = hint({}, provider_body("gemini_429_daily_quota.json"));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->source, "daily quota");
  EXPECT_EQ(h->wait, 20h); // 12:00 UTC -> 08:00 UTC next day
}

TEST_F(RetryHintsTest, WordedDailyQuotaWithoutAWaitCoolsUntilTheReset) {
  for (const char* body : {"Rate limit reached on requests per day (RPD): Limit 200, Used 200",
                           "You have exhausted your daily quota", "daily limit reached for this key",
                           "tokens per day exceeded"}) {
    auto h = hint({}, body);
    ASSERT_TRUE(h) << body;
    EXPECT_EQ(h->source, "daily quota") << body;
    EXPECT_EQ(h->wait, 20h) << body;
  }
}

TEST_F(RetryHintsTest, PerMinuteWordingIsNotADailyQuota) {
  EXPECT_FALSE(hint({}, "Rate limit reached on tokens per min (TPM): Limit 30000"));
  EXPECT_FALSE(hint({}, provider_body("anthropic_429_rate_limit.json")));
}

TEST_F(RetryHintsTest, DailyResetIsTheNext0800Utc) {
  using namespace std::chrono;
  const sys_days day = sys_days{year{2026} / November / 29};
  EXPECT_EQ(next_daily_reset(day + 0h), day + 8h);
  EXPECT_EQ(next_daily_reset(day + 7h + 59min), day + 8h);
  EXPECT_EQ(next_daily_reset(day + 8h), day + 32h);
  EXPECT_EQ(next_daily_reset(day + 23h), day + 32h);
}

} // namespace
} // namespace keyshim::policy
