#include "policy/failure_policy.hpp"
#include "policy/socket_event.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace keyshim::policy {
namespace {

using namespace std::chrono_literals;

Verdict judge(const Outcome& outcome) {
  return classify(outcome, {}, std::chrono::system_clock::now(), {});
}

TEST(SocketEventFailure, ARateLimitErrorEventIsA429WithItsRetryAfter) {
  auto outcome = socket_event_failure(
      R"({"type":"error","status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow"},"headers":{"retry-after":"7"}})");
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->status, 429);
  ASSERT_EQ(outcome->headers.size(), 1U);
  EXPECT_EQ(outcome->headers[0].value, "7");
  Verdict verdict = judge(*outcome);
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_EQ(verdict.cooldown, 7s);
}

TEST(SocketEventFailure, StatusCodeIsReadWhenStatusIsAbsent) {
  auto outcome =
      socket_event_failure(R"({"type":"error","status_code":503,"error":{"message":"overloaded"}})");
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->status, 503);
}

TEST(SocketEventFailure, AFailedResponseForARateLimitIsA429WithTheMessagesHint) {
  auto outcome = socket_event_failure(
      R"({"type":"response.failed","response":{"id":"r1","error":{"code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 2s."}}})");
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->status, 429);
  EXPECT_EQ(judge(*outcome).action, Action::next_key);
}

TEST(SocketEventFailure, AnotherFailedResponseIsAnErrorEventOfA200Stream) {
  auto outcome = socket_event_failure(
      R"({"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}})");
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->status, 200);
  EXPECT_TRUE(outcome->event_stream);
  Verdict verdict = judge(*outcome);
  EXPECT_EQ(verdict.action, Action::next_key);
  EXPECT_NE(verdict.reason.find("server_error"), std::string::npos);
}

TEST(SocketEventFailure, OrdinaryEventsAndNonJsonAreNoFailure) {
  EXPECT_FALSE(socket_event_failure(R"({"type":"response.output_text.delta","delta":"an error occurred"})"));
  EXPECT_FALSE(socket_event_failure(R"({"type":"response.created"})"));
  EXPECT_FALSE(socket_event_failure("error"));
  EXPECT_FALSE(socket_event_failure(R"(["error"])"));
}

TEST(SocketTurn, ATurnNamingNoEarlierResponseCanBeResent) {
  EXPECT_EQ(socket_turn_resendable(R"({"type":"response.create","model":"gpt-5","input":[]})"), true);
  EXPECT_EQ(socket_turn_resendable(R"({"type":"response.create","previous_response_id":null})"), true);
  EXPECT_EQ(socket_turn_resendable(R"({"type":"response.create","previous_response_id":"resp_1"})"), false);
  EXPECT_EQ(socket_turn_resendable(R"({"type":"response.cancel"})"), std::nullopt);
  EXPECT_EQ(socket_turn_resendable("response.create"), std::nullopt);
}

TEST(SocketEventUsage, ReadsTheUsageOfACompletedResponse) {
  auto usage = socket_event_usage(
      R"({"type":"response.completed","response":{"id":"r1","usage":{"input_tokens":120,"output_tokens":31}}})");
  ASSERT_TRUE(usage);
  EXPECT_EQ(usage->input, 120U);
  EXPECT_EQ(usage->output, 31U);
}

TEST(SocketEventUsage, OtherEventsHaveNone) {
  EXPECT_FALSE(socket_event_usage(R"({"type":"response.output_text.delta","delta":"usage"})"));
  EXPECT_FALSE(socket_event_usage(R"({"type":"response.created","response":{"usage":null}})"));
}

} // namespace
} // namespace keyshim::policy
