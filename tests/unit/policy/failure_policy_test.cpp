// The failure table of docs/behaviour.md §5, one row at a time.
#include "policy/failure_policy.hpp"

#include "policy_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::policy {
namespace {

using namespace std::chrono_literals;
using test::event_stream;
using test::provider_body;
using test::response;
using test::transport;

class FailurePolicyTest : public ::testing::Test {
protected:
  Verdict classify_now(const Outcome& outcome, KeyHistory history = {}) {
    return classify(outcome, history, m_clock.now(), m_limits);
  }

  test::FakeClock m_clock;
  Limits m_limits;
};

// Row: 2xx/3xx and the first body bytes arrive.

TEST_F(FailurePolicyTest, SuccessCommitsAndClearsTheStreak) {
  Verdict verdict = classify_now(response(200, {}, ""), KeyHistory{2, 3});
  EXPECT_EQ(verdict.action, Action::commit);
  EXPECT_EQ(verdict.change, HealthChange::success);
  EXPECT_EQ(verdict.cooldown, 0ms);
  EXPECT_EQ(verdict.reason, "200");
}

TEST_F(FailurePolicyTest, RedirectsAndOther2xxCommit) {
  for (int status : {201, 204, 301, 302, 304, 307, 399}) {
    Verdict verdict = classify_now(response(status));
    EXPECT_EQ(verdict.action, Action::commit) << status;
    EXPECT_EQ(verdict.change, HealthChange::success) << status;
  }
}

TEST_F(FailurePolicyTest, HealthyEventStreamCommits) {
  Verdict verdict =
      classify_now(event_stream("event: message_start\ndata: {\"type\":\"message_start\"}\n\n"));
  EXPECT_EQ(verdict.action, Action::commit);
  EXPECT_EQ(verdict.change, HealthChange::success);
}

// Row: 200 event stream whose first event is an error.

TEST_F(FailurePolicyTest, EventStreamOpeningWithErrorMovesOnAndCools30Seconds) {
  Verdict verdict = classify_now(event_stream(
      "event: error\n"
      "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 30s);
  EXPECT_FALSE(verdict.rate_limited);
  EXPECT_EQ(verdict.reason, "error event overloaded_error");
}

TEST_F(FailurePolicyTest, ErrorEventIsJudgedOnlyByTheFirstEvent) {
  Verdict verdict = classify_now(event_stream(
      "data: {\"id\":\"chatcmpl-1\",\"choices\":[]}\n\ndata: {\"error\":{\"code\":\"server_error\"}}\n\n"));
  EXPECT_EQ(verdict.action, Action::commit);
}

TEST_F(FailurePolicyTest, ErrorLookingBodyWithoutEventStreamStillCommits) {
  Verdict verdict = classify_now(response(200, {}, R"({"error":{"type":"overloaded_error"}})"));
  EXPECT_EQ(verdict.action, Action::commit);
}

TEST_F(FailurePolicyTest, ErrorEventCooldownRespectsMaxCooldown) {
  m_limits.max_cooldown = 5s;
  Verdict verdict = classify_now(event_stream("event: error\ndata: {}\n\n"));
  EXPECT_EQ(verdict.cooldown, 5s);
  EXPECT_EQ(verdict.reason, "error event error");
}

// Row: connect/TLS error, reset or close before a response.

TEST_F(FailurePolicyTest, TransportErrorsRetryTheSameKeyAndCountTowardTheStreak) {
  struct Case {
    TransportFailure failure;
    const char* reason;
  };
  for (Case c : {Case{TransportFailure::connect, "connect error"}, Case{TransportFailure::tls, "tls error"},
                 Case{TransportFailure::closed_before_response, "closed before response"}}) {
    Verdict verdict = classify_now(transport(c.failure));
    EXPECT_EQ(verdict.action, Action::retry_same_key) << c.reason;
    EXPECT_EQ(verdict.change, HealthChange::failure) << c.reason;
    EXPECT_EQ(verdict.cooldown, 0ms) << c.reason;
    EXPECT_EQ(verdict.reason, c.reason);
  }
}

TEST_F(FailurePolicyTest, TransportErrorsNeverDisable) {
  Verdict verdict = classify_now(transport(TransportFailure::tls), KeyHistory{50, 0});
  EXPECT_EQ(verdict.change, HealthChange::failure);
  EXPECT_EQ(verdict.cooldown, 10min);
}

// Row: no first byte within first_byte_timeout.

TEST_F(FailurePolicyTest, FirstByteTimeoutNeverRetriesTheSameKey) {
  Verdict verdict = classify_now(transport(TransportFailure::first_byte_timeout));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::failure);
  EXPECT_EQ(verdict.cooldown, 0ms);
  EXPECT_EQ(verdict.reason, "first byte timeout");
}

TEST_F(FailurePolicyTest, FirstByteTimeoutCountsTowardTheStreak) {
  Verdict verdict = classify_now(transport(TransportFailure::first_byte_timeout), KeyHistory{2, 0});
  EXPECT_EQ(verdict.cooldown, 30s);
}

// Row: 500, 502, 503, 504, 529.

TEST_F(FailurePolicyTest, TransientServerErrorsRetryTheSameKey) {
  for (int status : {500, 502, 503, 504, 529}) {
    Verdict verdict = classify_now(response(status));
    EXPECT_EQ(verdict.action, Action::retry_same_key) << status;
    EXPECT_EQ(verdict.change, HealthChange::failure) << status;
    EXPECT_EQ(verdict.cooldown, 0ms) << status;
    EXPECT_EQ(verdict.reason, std::to_string(status));
  }
}

TEST_F(FailurePolicyTest, AnthropicOverloadedIsATransientFailure) {
  Verdict verdict = classify_now(response(529, {}, provider_body("anthropic_529_overloaded.json")));
  EXPECT_EQ(verdict.action, Action::retry_same_key);
  EXPECT_EQ(verdict.change, HealthChange::failure);
  EXPECT_EQ(verdict.reason, "529");
}

TEST_F(FailurePolicyTest, FailureStreakCoolsFromTheThirdFailureDoublingToTenMinutes) {
  // consecutive_failures before this one -> the cooldown this one brings.
  const std::pair<int, std::chrono::milliseconds> expected[] = {
      {0, 0s},   {1, 0s},   {2, 30s},  {3, 60s},  {4, 120s},
      {5, 240s}, {6, 480s}, {7, 600s}, {8, 600s}, {1000, 600s},
  };
  for (const auto& [previous, cooldown] : expected) {
    Verdict verdict = classify_now(response(503), KeyHistory{previous, 0});
    EXPECT_EQ(verdict.cooldown, cooldown) << "after " << previous << " failures";
  }
}

TEST_F(FailurePolicyTest, FailureStreakCooldownRespectsMaxCooldown) {
  m_limits.max_cooldown = 45s;
  EXPECT_EQ(classify_now(response(502), KeyHistory{3, 0}).cooldown, 45s);
}

// Row: 429.

TEST_F(FailurePolicyTest, RateLimitWithoutHintCools60SecondsAndExtendsTheStreak) {
  Verdict verdict = classify_now(response(429));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 60s);
  EXPECT_TRUE(verdict.rate_limited);
  EXPECT_EQ(verdict.reason, "429");
}

TEST_F(FailurePolicyTest, RateLimitWithoutHintDoublesToOneHour) {
  const std::pair<int, std::chrono::milliseconds> expected[] = {
      {0, 60s}, {1, 120s}, {2, 240s}, {3, 480s}, {4, 960s}, {5, 1920s}, {6, 3600s}, {7, 3600s}, {500, 3600s},
  };
  for (const auto& [previous, cooldown] : expected) {
    EXPECT_EQ(classify_now(response(429), KeyHistory{0, previous}).cooldown, cooldown)
        << "after " << previous << " rate limits";
  }
}

TEST_F(FailurePolicyTest, RateLimitWithRetryAfterCoolsForTheHint) {
  Verdict verdict = classify_now(response(429, {{"Retry-After", "17"}}));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 17s);
  EXPECT_FALSE(verdict.rate_limited);
  EXPECT_EQ(verdict.reason, "429 Retry-After");
}

TEST_F(FailurePolicyTest, RateLimitHintIsNotDoubledByTheStreak) {
  Verdict verdict = classify_now(response(429, {{"retry-after", "5"}}), KeyHistory{0, 4});
  EXPECT_EQ(verdict.cooldown, 5s);
}

TEST_F(FailurePolicyTest, RateLimitHintIsCappedAtMaxCooldown) {
  m_limits.max_cooldown = std::chrono::hours(2);
  Verdict verdict = classify_now(response(429, {{"Retry-After", "86400"}}));
  EXPECT_EQ(verdict.cooldown, std::chrono::hours(2));
}

TEST_F(FailurePolicyTest, RateLimitDatePastYear2262IsCappedAtMaxCooldownNotWrapped) {
  for (const char* date :
       {"Fri, 01 Jan 2500 00:00:00 GMT", "Wed, 01 Jan 3000 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"}) {
    Verdict verdict = classify_now(response(429, {{"Retry-After", date}}));
    EXPECT_EQ(verdict.cooldown, m_limits.max_cooldown) << date;
    EXPECT_EQ(verdict.reason, "429 Retry-After") << date;
  }
  Verdict verdict =
      classify_now(response(429, {{"anthropic-ratelimit-requests-reset", "9999-12-31T23:59:59Z"}}));
  EXPECT_EQ(verdict.cooldown, m_limits.max_cooldown);
}

TEST_F(FailurePolicyTest, RateLimitHintInThePastCoolsForAFloorOfOneSecond) {
  EXPECT_EQ(classify_now(response(429, {{"Retry-After", "0"}})).cooldown, 1s);
  EXPECT_EQ(classify_now(response(429, {{"Retry-After", "Sun, 29 Nov 2026 11:00:00 GMT"}})).cooldown, 1s);
}

TEST_F(FailurePolicyTest, RateLimitReasonNamesTheHintSource) {
  EXPECT_EQ(classify_now(response(429, {{"x-ratelimit-reset-requests", "6m0s"}})).reason,
            "429 x-ratelimit-reset-requests");
  EXPECT_EQ(classify_now(response(429, {}, R"({"details":[{"retryDelay": "38s"}]})")).reason,
            "429 retryDelay");
  EXPECT_EQ(classify_now(response(429, {}, "Too many requests. Please retry in 12.5s.")).reason,
            "429 body hint");
  EXPECT_EQ(classify_now(response(429, {}, "daily quota exhausted")).reason, "429 daily quota");
}

TEST_F(FailurePolicyTest, OpenAIRateLimitCoolsForTheWaitInItsMessage) {
  Verdict verdict = classify_now(response(429, {}, provider_body("openai_429_rate_limit.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 1924ms);
}

TEST_F(FailurePolicyTest, AnthropicRateLimitUsesItsHeaders) {
  Verdict verdict =
      classify_now(response(429,
                            {{"retry-after", "23"},
                             {"anthropic-ratelimit-input-tokens-remaining", "0"},
                             {"anthropic-ratelimit-input-tokens-reset", "2026-11-29T12:00:40Z"}},
                            provider_body("anthropic_429_rate_limit.json")));
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 23s);
  EXPECT_EQ(verdict.reason, "429 Retry-After");
}

TEST_F(FailurePolicyTest, AnthropicRateLimitWithoutHeadersFallsBackToBackoff) {
  // "try again later" is not a wait hint.
  Verdict verdict = classify_now(response(429, {}, provider_body("anthropic_429_rate_limit.json")));
  EXPECT_EQ(verdict.cooldown, 60s);
  EXPECT_TRUE(verdict.rate_limited);
}

TEST_F(FailurePolicyTest, GeminiDailyQuotaCoolsUntilThePacificMidnightReset) {
  // The clock reads 2026-11-29 12:00 UTC; the next reset is 2026-11-30 08:00 UTC.
  Verdict verdict = classify_now(response(429, {}, provider_body("gemini_429_daily_quota.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 20h);
  EXPECT_EQ(verdict.reason, "429 daily quota");
}

TEST_F(FailurePolicyTest, GeminiDailyQuotaIsNotMistakenForBilling) {
  // Its message says "check your plan and billing details", as rate limits do.
  Verdict verdict = classify_now(response(429, {}, provider_body("gemini_429_daily_quota.json")));
  EXPECT_NE(verdict.change, HealthChange::disable);
}

TEST_F(FailurePolicyTest, GeminiDailyQuotaCooldownIsCappedAtMaxCooldown) {
  m_limits.max_cooldown = std::chrono::hours(6);
  Verdict verdict = classify_now(response(429, {}, provider_body("gemini_429_daily_quota.json")));
  EXPECT_EQ(verdict.cooldown, std::chrono::hours(6));
}

TEST_F(FailurePolicyTest, GeminiPerMinuteQuotaCoolsForItsRetryDelay) {
  Verdict verdict = classify_now(response(429, {}, provider_body("gemini_429_per_minute.json")));
  EXPECT_EQ(verdict.cooldown, 17s);
  EXPECT_EQ(verdict.reason, "429 retryDelay");
}

// Row: 402, or 429/403 saying insufficient_quota / billing.

TEST_F(FailurePolicyTest, InsufficientQuotaDisablesInsteadOfCooling) {
  Verdict verdict = classify_now(
      response(429, {{"Retry-After", "20"}}, provider_body("openai_429_insufficient_quota.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "insufficient_quota");
}

TEST_F(FailurePolicyTest, PaymentRequiredDisablesForBilling) {
  Verdict verdict = classify_now(response(402, {}, "{}"));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "billing (402)");
}

TEST_F(FailurePolicyTest, AnthropicBillingErrorDisables) {
  Verdict verdict = classify_now(response(402, {}, provider_body("anthropic_402_billing.json")));
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "billing (402)");
}

TEST_F(FailurePolicyTest, AnthropicLowCreditBalanceDisablesEvenAsA400) {
  // Anthropic reports an empty balance as 400 invalid_request_error; another
  // key may well have credit, so this is not "every key would fail".
  Verdict verdict = classify_now(response(400, {}, provider_body("anthropic_400_credit_balance.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "billing (400)");
}

TEST_F(FailurePolicyTest, GeminiBillingDisabledForbiddenDisables) {
  Verdict verdict = classify_now(response(403, {}, provider_body("gemini_403_billing_disabled.json")));
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "billing (403)");
}

TEST_F(FailurePolicyTest, GeminiBillingRequiredDisables) {
  Verdict verdict = classify_now(response(400, {}, provider_body("gemini_400_billing_required.json")));
  EXPECT_EQ(verdict.change, HealthChange::disable);
}

TEST_F(FailurePolicyTest, InsufficientQuotaIsFoundInATruncatedBody) {
  std::string truncated = R"({"error": {"message": "You exceeded", "type": "insufficient_quota", "par)";
  Verdict verdict = classify_now(response(429, {}, truncated));
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "insufficient_quota");
}

// Row: 401.

TEST_F(FailurePolicyTest, UnauthorizedDisables) {
  for (const char* body : {"", "not json", "{\"error\":{\"code\":\"invalid_api_key\"}}"}) {
    Verdict verdict = classify_now(response(401, {}, body));
    EXPECT_EQ(verdict.action, Action::next_key);
    EXPECT_EQ(verdict.change, HealthChange::disable);
    EXPECT_EQ(verdict.reason, "401 unauthorized");
  }
  EXPECT_EQ(classify_now(response(401, {}, provider_body("openai_401_invalid_api_key.json"))).change,
            HealthChange::disable);
  EXPECT_EQ(classify_now(response(401, {}, provider_body("anthropic_401_authentication.json"))).change,
            HealthChange::disable);
}

TEST_F(FailurePolicyTest, GeminiInvalidKeyAs400Disables) {
  Verdict verdict = classify_now(response(400, {}, provider_body("gemini_400_api_key_invalid.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::disable);
  EXPECT_EQ(verdict.reason, "invalid api key (400)");
}

// Row: other 403.

TEST_F(FailurePolicyTest, OtherForbiddenCoolsTenMinutes) {
  Verdict verdict = classify_now(response(403, {}, provider_body("gemini_403_permission_denied.json")));
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.change, HealthChange::cool);
  EXPECT_EQ(verdict.cooldown, 10min);
  EXPECT_FALSE(verdict.rate_limited);
  EXPECT_EQ(verdict.reason, "403 forbidden");
}

// Row: any other 4xx and other 5xx.

TEST_F(FailurePolicyTest, RequestErrorsAreRelayedAndLeaveHealthUntouched) {
  for (int status : {400, 404, 405, 408, 409, 413, 415, 422, 451, 501, 505, 599}) {
    Verdict verdict =
        classify_now(response(status, {}, "{\"error\":{\"message\":\"bad\"}}"), KeyHistory{2, 2});
    EXPECT_EQ(verdict.action, Action::relay) << status;
    EXPECT_EQ(verdict.change, HealthChange::none) << status;
    EXPECT_EQ(verdict.cooldown, 0ms) << status;
    EXPECT_EQ(verdict.reason, std::to_string(status));
  }
}

TEST_F(FailurePolicyTest, ContextLengthErrorIsRelayed) {
  Verdict verdict = classify_now(response(400, {}, provider_body("openai_400_context_length.json")));
  EXPECT_EQ(verdict.action, Action::relay);
  EXPECT_EQ(verdict.change, HealthChange::none);
}

TEST_F(FailurePolicyTest, NonJsonBodiesNeverBreakClassification) {
  std::string binary("\x00\xff\xfe{\"error\":", 10);
  for (int status : {400, 402, 403, 429, 500}) {
    Verdict verdict = classify_now(response(status, {}, binary));
    EXPECT_FALSE(verdict.reason.empty()) << status;
  }
}

} // namespace
} // namespace keyshim::policy
