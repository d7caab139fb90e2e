// `keyshim replay`'s pure parts: decoding a captured body, the request it
// re-sends and the comparison it prints.
#include "cli/replay_capture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::cli {
namespace {

TEST(ReplayCapture, Base64DecodesWithOrWithoutPaddingAndRefusesOtherText) {
  EXPECT_EQ(decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(decode_base64("aGVsbG8"), "hello");
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("/3t9"), "\xff{}");
  EXPECT_FALSE(decode_base64("aGVs bG8="));
  EXPECT_FALSE(decode_base64("a"));
  EXPECT_FALSE(decode_base64("aGVsbG8-"));
}

CapturedExchange captured(const std::string& pool, const std::string& target) {
  CapturedExchange out;
  out.id = 7;
  out.pool = pool;
  out.method = "POST";
  out.target = target;
  out.request_head = {{"Content-Type", "application/json"},
                      {"X-Api-Key", "sk-...Wq9z"},
                      {"Transfer-Encoding", "chunked"},
                      {"KeyShim-Key", "old"}};
  return out;
}

TEST(ReplayCapture, ANamedPoolsCaptureGoesBackToThatPool) {
  EXPECT_EQ(replay_request(captured("openai", "/openai/v1/x"), "", "").target, "/openai/v1/x");
  EXPECT_EQ(replay_request(captured("openai", "/v1/x"), "", "").target, "/openai/v1/x");
  EXPECT_EQ(replay_request(captured("openai", "/openai"), "", "").target, "/openai");
  EXPECT_EQ(replay_request(captured("default", "/v1/x"), "", "").target, "/v1/x");
  EXPECT_EQ(replay_request(captured("open", "/openai/v1/x"), "", "").target, "/open/openai/v1/x");
}

TEST(ReplayCapture, TheHeadKeepsWhatTheToolSentAndAddsTheReplayFields) {
  server::LocalRequest request = replay_request(captured("default", "/v1/x"), "team", "tok");
  server::HeaderList expected = {{"Content-Type", "application/json"},
                                 {"keyshim-replay", "7"},
                                 {"keyshim-key", "team"},
                                 {"Authorization", "Bearer tok"}};
  EXPECT_EQ(request.headers, expected);
}

TEST(ReplayCapture, TheComparisonSaysWhenTheFirstClientLeftAndWhenNoKeyIsKnown) {
  CapturedExchange first = captured("default", "/v1/x");
  ReplayAnswer replay;
  replay.status = 200;
  std::string text = render_comparison(first, replay, "");
  EXPECT_NE(text.find("\nstatus        none (the client left)         200\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nkey           -                              chosen by keyshim\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("body, capture:\n  (no body)\nbody, replay:\n  (no body)\n"), std::string::npos)
      << text;
}

} // namespace
} // namespace keyshim::cli
