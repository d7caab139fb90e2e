// Rows of the fault matrix (FAULT_MATRIX.md) that no other file covers: a
// reset right after the head, a reset or a short body or a broken chunk
// mid-body, every retry-hint shape of a 429, a 5xx streak, and a client that
// hangs up while its body is still uploading.
#include "policy/retry_hints.hpp"
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"
#include "util/clock.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <ctime>

namespace keyshim::test {
namespace {

Scripted matrix_sse(std::vector<std::string> pieces) {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = std::move(pieces);
  return s;
}

std::string matrix_stream_request() {
  return make_request("POST", "/v1/chat/completions", R"({"stream":true})");
}

httplib::Result matrix_post(const Shim& shim) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post("/v1/chat/completions", R"({"messages":[]})", "application/json");
}

pool::KeyHealth matrix_health(Shim& shim, std::size_t index) {
  return shim.server().state()->pools.at(0).keys->health(index);
}

// Sends a stream request and reads one answer: complete, or cut by a close
// (never left hanging).
RawResponse stream_through(Shim& shim) {
  RawConnection conn(shim.port());
  conn.send(matrix_stream_request());
  if (!conn.read_response(10s)) {
    EXPECT_TRUE(conn.read_to_close(10s)) << "an incomplete answer must end with a close";
  }
  return parse_response(conn.received());
}

TEST(FaultMatrix, ResetRightAfterTheHeadIsAFailedAttemptAndTheNextKeyServes) {
  FakeUpstream upstream;
  Scripted reset = matrix_sse({"data: never\n\n"});
  reset.cut_after_pieces = 0;
  reset.reset_at_cut = true;
  upstream.push(reset);
  upstream.push(matrix_sse({"data: ok\n\n"}));
  Shim shim(pool_toml(2), upstream.base_url());
  RawResponse res = stream_through(shim);
  EXPECT_EQ(res.status, 200);
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(res.body, "data: ok\n\n");
  EXPECT_EQ(upstream.request_count(), 2u);
}

TEST(FaultMatrix, ResetMidStreamEndsTheAnswerAbnormally) {
  FakeUpstream upstream;
  Scripted reset = matrix_sse({"data: 1\n\n", "data: 2\n\n"});
  reset.cut_after_pieces = 1;
  reset.reset_at_cut = true;
  upstream.push(reset);
  Shim shim(pool_toml(2), upstream.base_url());
  RawResponse res = stream_through(shim);
  EXPECT_EQ(res.status, 200);
  EXPECT_FALSE(res.complete) << "a reset stream must not end with the final chunk";
  EXPECT_EQ(res.body, "data: 1\n\n");
  EXPECT_EQ(upstream.request_count(), 1u);
}

TEST(FaultMatrix, BodyShorterThanItsContentLengthIsNeverACompleteAnswer) {
  FakeUpstream upstream;
  Scripted shorter = json(200, R"({"id":"chatcmpl-1",)");
  shorter.pieces.push_back(R"("object":"chat.completion"})");
  shorter.cut_after_pieces = 1; // Content-Length counts both pieces
  upstream.push(shorter);
  Shim shim(pool_toml(2), upstream.base_url());
  RawResponse res = stream_through(shim);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.header("Content-Length"),
            std::to_string(shorter.pieces[0].size() + shorter.pieces[1].size()));
  EXPECT_FALSE(res.complete);
  EXPECT_EQ(res.body, shorter.pieces[0]);
  EXPECT_EQ(upstream.request_count(), 1u);
}

TEST(FaultMatrix, BrokenChunkMidStreamEndsTheAnswerAbnormally) {
  FakeUpstream upstream;
  Scripted broken = matrix_sse({"data: 1\n\n", "data: 2\n\n"});
  broken.cut_after_pieces = 1;
  broken.raw_at_cut = "zz\r\nnot a chunk\r\n0\r\n\r\n";
  upstream.push(broken);
  Shim shim(pool_toml(2), upstream.base_url());
  RawResponse res = stream_through(shim);
  EXPECT_EQ(res.status, 200);
  EXPECT_FALSE(res.complete) << "a broken upstream chunk must not become a final chunk";
  EXPECT_EQ(res.body, "data: 1\n\n");
  EXPECT_EQ(upstream.request_count(), 1u);
}

// One shape of rate-limit hint, the reason keyshim gives, and the cooldown
// it should set (seconds, within a few seconds of slack for the clock).
struct HintShape {
  const char* name;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  const char* reason;
  long long seconds;
};

std::string http_date_in(std::time_t seconds) {
  std::time_t t = std::time(nullptr) + seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return text;
}

std::string rfc3339_in(std::time_t seconds) {
  std::time_t t = std::time(nullptr) + seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

class RateLimitHints : public ::testing::TestWithParam<int> {};

std::vector<HintShape> hint_shapes() {
  const std::string err = R"({"error":{"message":"rate limited","type":"rate_limit_error"}})";
  return {
      {"retry_after_seconds", {{"Retry-After", "120"}}, err, "429 Retry-After", 120},
      {"retry_after_date", {{"Retry-After", http_date_in(120)}}, err, "429 Retry-After", 120},
      {"retry_after_date_far_future",
       {{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"}},
       err,
       "429 Retry-After",
       3600},
      {"retry_after_ms", {{"retry-after-ms", "120000"}}, err, "429 retry-after-ms", 120},
      {"openai_reset_requests",
       {{"x-ratelimit-reset-requests", "2m0s"}},
       err,
       "429 x-ratelimit-reset-requests",
       120},
      {"openai_reset_tokens",
       {{"x-ratelimit-reset-tokens", "1m30s"}},
       err,
       "429 x-ratelimit-reset-tokens",
       90},
      {"anthropic_reset",
       {{"anthropic-ratelimit-requests-remaining", "0"},
        {"anthropic-ratelimit-requests-reset", rfc3339_in(120)}},
       err,
       "429 anthropic-ratelimit-requests-reset",
       120},
      {"gemini_retry_delay",
       {},
       R"({"error":{"code":429,"details":[{"retryDelay":"120s"}]}})",
       "429 retryDelay",
       120},
      {"body_hint",
       {},
       R"({"error":{"message":"Rate limit reached. Please retry in 120s."}})",
       "429 body hint",
       120},
      {"daily_quota",
       {},
       R"({"error":{"message":"daily quota exhausted"}})",
       "429 daily quota",
       std::min<long long>(
           3600, std::chrono::duration_cast<std::chrono::seconds>(
                     policy::next_daily_reset(util::system_clock().now()) - util::system_clock().now())
                     .count())},
      {"no_hint", {}, err, "429", 60},
  };
}

TEST_P(RateLimitHints, CoolTheKeyForTheHintCappedAndTheNextKeyServes) {
  HintShape shape = hint_shapes().at(static_cast<std::size_t>(GetParam()));
  FakeUpstream upstream;
  upstream.push(json(429, shape.body, shape.headers));
  upstream.push(json(200, R"({"id":"chatcmpl-1"})"));
  Shim shim(pool_toml(2, "max_cooldown = \"1h\"\n"), upstream.base_url());
  auto res = matrix_post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  pool::KeyHealth cooled = matrix_health(shim, 0);
  EXPECT_EQ(cooled.state, pool::KeyState::cooling) << shape.name;
  EXPECT_EQ(cooled.reason.rfind(shape.reason, 0), 0u) << shape.name << ": " << cooled.reason;
  auto left =
      std::chrono::duration_cast<std::chrono::seconds>(cooled.until - util::system_clock().now()).count();
  EXPECT_GE(left, shape.seconds - 5) << shape.name;
  EXPECT_LE(left, shape.seconds + 1) << shape.name;
}

INSTANTIATE_TEST_SUITE_P(FaultMatrix, RateLimitHints, ::testing::Range(0, 11),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(hint_shapes().at(static_cast<std::size_t>(p.param)).name);
                         });

TEST(FaultMatrix, AStreakOfThree5xxCoolsTheKeyAndTheNextRequestIsNotSent) {
  FakeUpstream upstream;
  for (int i = 0; i < 3; ++i) {
    upstream.push(json(i == 1 ? 529 : 500, R"({"error":{"message":"overloaded"}})"));
  }
  Shim shim(pool_toml(1, "max_attempts = 1\n"), upstream.base_url());
  for (int i = 0; i < 3; ++i) {
    auto res = matrix_post(shim);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, i == 1 ? 529 : 500) << "the last error is relayed, request " << i;
  }
  EXPECT_EQ(matrix_health(shim, 0).state, pool::KeyState::cooling);
  auto res = matrix_post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_FALSE(res->get_header_value("Retry-After").empty());
  EXPECT_EQ(upstream.request_count(), 3u);
}

TEST(FaultMatrix, ClientHangingUpWhileItsBodyUploadsSendsNothingAndKeyshimServesOn) {
  LogCapture logs;
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  {
    RawConnection quitter(shim.port());
    quitter.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: 100000\r\n\r\n{\"model\":\"m\",\"messages\":[");
    quitter.close();
  }
  // A hang-up, not a malformed request: said at info, like any hang-up.
  ASSERT_TRUE(logs.wait_for("client closed the connection while sending its request body")) << logs.text();
  EXPECT_FALSE(logs.contains("refused a request")) << logs.text();
  EXPECT_EQ(upstream.request_count(), 0u);
  auto res = matrix_post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(upstream.request_count(), 1u);
  // The key is released before the request line is written.
  ASSERT_TRUE(logs.wait_for("POST /v1/chat/completions 200")) << logs.text();
  EXPECT_EQ(matrix_health(shim, 0).state, pool::KeyState::available);
  EXPECT_EQ(matrix_health(shim, 0).in_flight, 0);
}

} // namespace
} // namespace keyshim::test
