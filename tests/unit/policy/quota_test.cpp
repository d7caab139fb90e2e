// Reading the rate limits OpenAI and Anthropic report on every response,
// and when a spent one sets a key aside (docs/behaviour.md §4.1).
#include "policy/quota.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace keyshim::policy {
namespace {

using namespace std::chrono_literals;
using Fields = std::vector<std::pair<std::string, std::string>>;

class QuotaTest : public ::testing::Test {
protected:
  std::optional<Quota> read(const Fields& fields) {
    QuotaReader reader;
    for (const auto& [name, value] : fields) {
      reader.add(name, value);
    }
    return reader.read(now());
  }
  util::TimePoint now() const { return m_clock.now(); }

  test::FakeClock m_clock; // 2026-11-29T12:00:00Z
};

TEST_F(QuotaTest, OpenAiFiguresWithDurationResets) {
  auto quota = read({{"x-ratelimit-limit-requests", "500"},
                     {"x-ratelimit-remaining-requests", "499"},
                     {"x-ratelimit-reset-requests", "120ms"},
                     {"x-ratelimit-limit-tokens", "30000"},
                     {"x-ratelimit-remaining-tokens", "29000"},
                     {"x-ratelimit-reset-tokens", "1h2m3.5s"}});
  ASSERT_TRUE(quota);
  const QuotaFigures& requests = (*quota)[QuotaKind::requests];
  EXPECT_EQ(requests.limit, 500u);
  EXPECT_EQ(requests.remaining, 499u);
  EXPECT_EQ(requests.reset, now() + 120ms);
  const QuotaFigures& tokens = (*quota)[QuotaKind::tokens];
  EXPECT_EQ(tokens.limit, 30000u);
  EXPECT_EQ(tokens.remaining, 29000u);
  EXPECT_EQ(tokens.reset, now() + 3723500ms);
  EXPECT_EQ((*quota)[QuotaKind::input_tokens], QuotaFigures{});
  EXPECT_EQ((*quota)[QuotaKind::unified], QuotaFigures{});
}

TEST_F(QuotaTest, OpenAiResetFormsOfCompatibleServers) {
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "6m0s"}}))[QuotaKind::requests].reset, now() + 360s);
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "1s"}}))[QuotaKind::requests].reset, now() + 1s);
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "20"}}))[QuotaKind::requests].reset, now() + 20s);
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "2m59.56s"}}))[QuotaKind::requests].reset,
            now() + 179560ms);
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "0.5ms"}}))[QuotaKind::requests].reset, now() + 1ms)
      << "rounded up: never back before the reset";
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "1500us"}}))[QuotaKind::requests].reset, now() + 2ms);
  EXPECT_EQ((*read({{"x-ratelimit-reset-requests", "0s"}}))[QuotaKind::requests].reset, now());
  auto epoch = std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count() + 30;
  EXPECT_EQ((*read({{"x-ratelimit-reset-tokens", std::to_string(epoch)}}))[QuotaKind::tokens].reset,
            now() + 30s);
}

TEST_F(QuotaTest, AnthropicFiguresWithRfc3339Resets) {
  auto quota = read({{"anthropic-ratelimit-requests-limit", "50"},
                     {"anthropic-ratelimit-requests-remaining", "49"},
                     {"anthropic-ratelimit-requests-reset", "2026-11-29T12:00:01Z"},
                     {"anthropic-ratelimit-tokens-limit", "80000"},
                     {"anthropic-ratelimit-tokens-remaining", "0"},
                     {"anthropic-ratelimit-tokens-reset", "2026-11-29T12:00:45Z"},
                     {"anthropic-ratelimit-input-tokens-limit", "40000"},
                     {"anthropic-ratelimit-input-tokens-remaining", "12000"},
                     {"anthropic-ratelimit-input-tokens-reset", "2026-11-29T12:00:30+00:00"},
                     {"anthropic-ratelimit-output-tokens-limit", "8000"},
                     {"anthropic-ratelimit-output-tokens-remaining", "8000"},
                     {"anthropic-ratelimit-output-tokens-reset", "2026-11-29T12:00:02.5Z"}});
  ASSERT_TRUE(quota);
  EXPECT_EQ((*quota)[QuotaKind::requests].remaining, 49u);
  EXPECT_EQ((*quota)[QuotaKind::requests].reset, now() + 1s);
  EXPECT_EQ((*quota)[QuotaKind::tokens].remaining, 0u);
  EXPECT_EQ((*quota)[QuotaKind::tokens].reset, now() + 45s);
  EXPECT_EQ((*quota)[QuotaKind::input_tokens].limit, 40000u);
  EXPECT_EQ((*quota)[QuotaKind::input_tokens].reset, now() + 30s);
  EXPECT_EQ((*quota)[QuotaKind::output_tokens].remaining, 8000u);
  EXPECT_EQ((*quota)[QuotaKind::output_tokens].reset, now() + 2500ms);
}

TEST_F(QuotaTest, NamesAreCaseInsensitiveAndValuesTrimmed) {
  auto quota = read({{"X-RateLimit-Remaining-Requests", " 7 "}, {"Anthropic-RateLimit-Tokens-Limit", "9"}});
  ASSERT_TRUE(quota);
  EXPECT_EQ((*quota)[QuotaKind::requests].remaining, 7u);
  EXPECT_EQ((*quota)[QuotaKind::tokens].limit, 9u);
}

TEST_F(QuotaTest, TheFirstOfARepeatedFieldCounts) {
  auto quota = read({{"x-ratelimit-remaining-requests", "3"}, {"x-ratelimit-remaining-requests", "0"}});
  EXPECT_EQ((*quota)[QuotaKind::requests].remaining, 3u);
}

TEST_F(QuotaTest, AResponseWithoutRateLimitFieldsHasNone) {
  EXPECT_FALSE(read({}));
  EXPECT_FALSE(read({{"content-type", "application/json"},
                     {"x-request-id", "req_1"},
                     {"x-ratelimit", "5"},
                     {"x-ratelimit-limit", "5"},                 // OpenRouter's form names no kind
                     {"x-ratelimit-limit-images", "5"},          // not a kind keyshim knows
                     {"anthropic-ratelimit-requests-used", "5"}, // not a figure
                     {"anthropic-ratelimit-", "5"},
                     {"a", ""}}));
}

TEST_F(QuotaTest, GarbageValuesAreIgnoredNeverGuessed) {
  for (const char* bad : {"", "-1", "1e6", "12.5", "0x10", "1,000", "ten", "9999999999999999", "1 2",
                          "18446744073709551616000000"}) {
    EXPECT_FALSE(read({{"x-ratelimit-remaining-requests", bad}})) << bad;
  }
  for (const std::string& bad :
       std::vector<std::string>{"soon", "-5s", "2026-13-45T99:00:00Z", "Sun, 29 Nov 2026 12:05:30 GMT",
                                "1e300", std::string(200, '9')}) {
    EXPECT_FALSE(read({{"x-ratelimit-reset-requests", bad}})) << bad;
    EXPECT_FALSE(read({{"anthropic-ratelimit-tokens-reset", bad}})) << bad;
  }
}

TEST_F(QuotaTest, ResetsFarAwayAreIgnored) {
  EXPECT_FALSE(read({{"anthropic-ratelimit-tokens-reset", "9999-12-31T23:59:59Z"}}));
  EXPECT_FALSE(read({{"anthropic-ratelimit-tokens-reset", "1970-01-01T00:00:00Z"}}));
  EXPECT_FALSE(read({{"x-ratelimit-reset-tokens", "800h"}}));
  EXPECT_FALSE(read({{"x-ratelimit-reset-tokens", "99999999999999"}})); // epoch milliseconds, year 5138
  EXPECT_TRUE(read({{"x-ratelimit-reset-tokens", "24h"}}));
  EXPECT_TRUE(read({{"anthropic-ratelimit-tokens-reset", "2026-11-29T11:00:00Z"}}))
      << "an hour ago: a reset that passed, kept as reported";
}

TEST_F(QuotaTest, GoodFiguresSurviveABadNeighbour) {
  auto quota = read({{"x-ratelimit-remaining-requests", "oops"}, {"x-ratelimit-limit-requests", "60"}});
  ASSERT_TRUE(quota);
  EXPECT_EQ((*quota)[QuotaKind::requests].limit, 60u);
  EXPECT_FALSE((*quota)[QuotaKind::requests].remaining);
}

TEST_F(QuotaTest, UnifiedLimitInPerCentFromTheFullestWindow) {
  auto epoch = std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count() + 3600;
  auto quota = read({{"anthropic-ratelimit-unified-status", "allowed"},
                     {"anthropic-ratelimit-unified-reset", std::to_string(epoch)},
                     {"anthropic-ratelimit-unified-5h-utilization", "0.42"},
                     {"anthropic-ratelimit-unified-7d-utilization", "0.305"},
                     {"anthropic-ratelimit-unified-overage-utilization", "1.0"}, // not a window
                     {"anthropic-ratelimit-unified-representative-claim", "five_hour"}});
  ASSERT_TRUE(quota);
  const QuotaFigures& unified = (*quota)[QuotaKind::unified];
  EXPECT_EQ(unified.limit, 100u);
  EXPECT_EQ(unified.remaining, 58u);
  EXPECT_EQ(unified.reset, now() + 1h);
}

TEST_F(QuotaTest, UnifiedLimitIsSpentOnlyWhenRejected) {
  auto full = read({{"anthropic-ratelimit-unified-status", "allowed_warning"},
                    {"anthropic-ratelimit-unified-5h-utilization", "1.0"}});
  EXPECT_EQ((*full)[QuotaKind::unified].remaining, 1u) << "at 100 % but allowed: the provider's call";
  auto rejected = read({{"anthropic-ratelimit-unified-status", "rejected"}});
  EXPECT_EQ((*rejected)[QuotaKind::unified].remaining, 0u);
  EXPECT_FALSE(read({{"anthropic-ratelimit-unified-5h-utilization", "42"}})) << "not a fraction: ignored";
  EXPECT_FALSE(read({{"anthropic-ratelimit-unified-5h-utilization", "nan"}}));
  EXPECT_FALSE(read({{"anthropic-ratelimit-unified-status", "allowed"}})) << "says nothing countable";
}

TEST_F(QuotaTest, ASpentLimitSetsTheKeyAsideUntilItsReset) {
  auto quota = read({{"x-ratelimit-remaining-requests", "0"},
                     {"x-ratelimit-reset-requests", "3s"},
                     {"x-ratelimit-remaining-tokens", "100"},
                     {"x-ratelimit-reset-tokens", "50s"}});
  auto aside = quota_set_aside(*quota, now(), 24h);
  ASSERT_TRUE(aside);
  EXPECT_EQ(aside->wait, 3s);
  EXPECT_EQ(aside->reason, "quota: 0 requests left");
}

TEST_F(QuotaTest, SeveralSpentLimitsRestUntilTheLastReset) {
  auto quota = read({{"anthropic-ratelimit-requests-remaining", "0"},
                     {"anthropic-ratelimit-requests-reset", "2026-11-29T12:00:05Z"},
                     {"anthropic-ratelimit-output-tokens-remaining", "0"},
                     {"anthropic-ratelimit-output-tokens-reset", "2026-11-29T12:00:20Z"}});
  auto aside = quota_set_aside(*quota, now(), 24h);
  ASSERT_TRUE(aside);
  EXPECT_EQ(aside->wait, 20s);
  EXPECT_EQ(aside->reason, "quota: 0 output tokens left");
}

TEST_F(QuotaTest, NoSetAsideWhileSomethingRemains) {
  auto quota = read({{"x-ratelimit-remaining-requests", "1"}, {"x-ratelimit-reset-requests", "3s"}});
  EXPECT_FALSE(quota_set_aside(*quota, now(), 24h));
}

TEST_F(QuotaTest, ASpentLimitWhoseResetPassedIsWholeAgain) {
  auto quota = read({{"anthropic-ratelimit-tokens-remaining", "0"},
                     {"anthropic-ratelimit-tokens-reset", "2026-11-29T11:59:00Z"}});
  EXPECT_FALSE(quota_set_aside(*quota, now(), 24h));
  auto now_reset = read({{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "0s"}});
  EXPECT_FALSE(quota_set_aside(*now_reset, now(), 24h));
}

TEST_F(QuotaTest, ASpentLimitWithoutAResetRestsAMinuteAtMost) {
  auto quota = read({{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "garbage"}});
  auto aside = quota_set_aside(*quota, now(), 24h);
  ASSERT_TRUE(aside);
  EXPECT_EQ(aside->wait, 60s);
  EXPECT_EQ(aside->reason, "quota: 0 tokens left");
}

TEST_F(QuotaTest, ASetAsideIsBoundedByMaxCooldown) {
  auto quota = read(
      {{"anthropic-ratelimit-unified-status", "rejected"}, {"anthropic-ratelimit-unified-reset", "72h"}});
  auto aside = quota_set_aside(*quota, now(), 1h);
  ASSERT_TRUE(aside);
  EXPECT_EQ(aside->wait, 1h);
  EXPECT_EQ(aside->reason, "quota: unified limit reached");
}

} // namespace
} // namespace keyshim::policy
