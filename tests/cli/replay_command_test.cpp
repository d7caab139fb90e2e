// `keyshim replay` as a black box (issue 21 §3): the built binary asks a
// fake instance for /captures/ID (served from canned JSON in the agreed
// shape, /work/notes/capture-schema.md), replays the request to it, and the
// test checks what was sent, what was printed and how it exited.
#include "replay_fake_instance.hpp"
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using keyshim::test::ChildProcess;
using keyshim::test::FakeInstance;
using keyshim::test::Replayed;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;

namespace {

using namespace std::chrono_literals;

constexpr const char* k_replay_token = "replay-test-token-0001";
constexpr const char* k_body =
    R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true})";

// A capture of a streamed request that got 429 from k0, then 200 from k1.
std::string capture_json(std::uint64_t id, const std::string& request_extra = "") {
  return R"({"id":)" + std::to_string(id) +
         R"(,"time":"2026-12-02T23:20:20.303Z","pool":"default","model":"gpt-4o",)"
         R"("method":"POST","target":"/v1/chat/completions?x=1","status":200,"duration_ms":1200,)"
         R"("ttfb_ms":300,"stream":true,"replay_of":null,)"
         R"("chain":[{"key":"k0","status":429,"verdict":"cool","ms":3},{"key":"k1","status":200,"verdict":"ok","ms":5}],)"
         R"("usage":{"input_tokens":10,"output_tokens":20},)"
         R"("request":{"head":[["content-type","application/json"],["user-agent","tool/1.0"],)"
         R"(["accept-encoding","gzip"],["x-custom","kept"],["connection","keep-alive"],)"
         R"(["content-length","999"],["host","127.0.0.1:1"],["keyshim-replay","3"]],)" +
         request_extra +
         R"("body_size":80},)"
         R"("response":{"head":[["content-type","text/event-stream"]],)"
         R"("body":"data: {\"captured\":1}\n\ndata: {\"captured\":2}\n\n","body_base64":false,)"
         R"("body_truncated":false,"body_size":4567,"events":true}})";
}

std::string plain_body() {
  std::string escaped;
  for (char c : std::string(k_body)) {
    escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
  }
  return R"("body":")" + escaped + R"(","body_base64":false,"body_truncated":false,)";
}

class ReplayCommand : public ::testing::Test {
protected:
  void SetUp() override {
    m_path =
        m_dir.write("keys.toml",
                    "[server]\nlisten = \"" + instance.address() + "\"\nclient_token = \"" + k_replay_token +
                        "\"\n\n[upstream]\nbase_url = \"http://127.0.0.1:9\"\n\n[[keys]]\nlabel = "
                        "\"k0\"\nkey = \"sk-replay-test-key-0\"\n",
                    0600);
  }

  RunOptions options() const {
    RunOptions options;
    options.env = {{"KEYSHIM_CONFIG", m_dir.path() + "/absent.toml"}, {"HOME", m_dir.path()}};
    options.unset_env = {"XDG_CONFIG_HOME"};
    options.timeout = 30s;
    return options;
  }

  RunResult replay(std::vector<std::string> args) const {
    args.insert(args.begin(), {KEYSHIM_BINARY, "replay"});
    args.insert(args.end(), {"-c", m_path});
    return keyshim::test::run_binary(args, options());
  }

  FakeInstance instance{k_replay_token};
  TempDir m_dir;
  std::string m_path;
};

TEST_F(ReplayCommand, ResendsTheCapturedRequestWithTheReplayFieldsAndTheClientToken) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  RunResult result = replay({"12", "--key", "k1"});
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  std::optional<Replayed> sent = instance.replayed();
  ASSERT_TRUE(sent) << result.all_output();
  EXPECT_EQ(sent->method, "POST");
  EXPECT_EQ(sent->target, "/v1/chat/completions?x=1");
  EXPECT_EQ(sent->body, k_body);
  auto header = [&](const char* name) {
    auto it = sent->headers.find(name);
    return it == sent->headers.end() ? std::string("<absent>") : it->second;
  };
  EXPECT_EQ(header("keyshim-replay"), "12");
  EXPECT_EQ(sent->headers.count("keyshim-replay"), 1u) << "the capture's own replay field is not copied";
  EXPECT_EQ(header("keyshim-key"), "k1");
  EXPECT_EQ(header("Authorization"), std::string("Bearer ") + k_replay_token);
  EXPECT_EQ(header("x-custom"), "kept");
  EXPECT_EQ(header("user-agent"), "tool/1.0");
  EXPECT_EQ(header("content-type"), "application/json");
  EXPECT_EQ(header("Content-Length"), std::to_string(std::string(k_body).size()));
  EXPECT_EQ(header("accept-encoding"), "<absent>");
  EXPECT_EQ(header("Host"), instance.address());
}

TEST_F(ReplayCommand, PrintsTheAnswerThenTheComparisonWithTheCapture) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  instance.answer(200, {"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\n",
                        "data: [DONE]\n\n"});
  RunResult result = replay({"12"});
  ASSERT_EQ(result.exit_code, 0) << result.all_output();
  const std::string& out = result.out;
  EXPECT_NE(out.find("replaying capture 12: POST /v1/chat/completions?x=1 (pool default, model gpt-4o) on "
                     "the key keyshim chooses\nHTTP 200 text/event-stream\ndata: {\"choices\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("capture 12"), std::string::npos) << out;
  EXPECT_NE(out.find("\nstatus        200                            200\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nkey           k1 (k0:429,k1:200)             chosen by keyshim\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\nfirst byte    300ms"), std::string::npos) << out;
  EXPECT_NE(out.find("\ntotal         1.2s"), std::string::npos) << out;
  EXPECT_NE(out.find("\nusage         in 10, out 20                  in 11, out 7\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("first events, capture:\n  data: {\"captured\":1}\n  data: {\"captured\":2}\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("first events, replay:\n  data: {\"choices\":[]"), std::string::npos) << out;
  EXPECT_NE(out.find("  data: [DONE]\n"), std::string::npos) << out;
}

TEST_F(ReplayCommand, AStreamedAnswerIsPrintedAsItArrives) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  instance.answer(200, {"data: {\"first\":1}\n\n", "data: {\"second\":2}\n\n"}, /*hold=*/true);
  std::vector<std::string> args = {KEYSHIM_BINARY, "replay", "12", "-c", m_path};
  ChildProcess child = ChildProcess::start(args, options());
  ASSERT_TRUE(child.wait_for_stdout("data: {\"first\":1}")) << child.out() << child.err();
  EXPECT_TRUE(instance.holding) << "the instance holds the rest of the answer";
  EXPECT_EQ(child.out().find("second"), std::string::npos) << child.out();
  instance.release();
  RunResult result = child.wait();
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  EXPECT_NE(result.out.find("data: {\"first\":1}\n\ndata: {\"second\":2}\n"), std::string::npos)
      << result.out;
}

TEST_F(ReplayCommand, TheKeyThatServedComesFromTheInstancesCaptureOfTheReplay) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  instance.serve_list(
      R"({"size":200,"bytes":0,"body_limit":65536,"entries":[)"
      R"({"id":13,"replay_of":12,"chain":[{"key":"k0","status":200,"verdict":"ok","ms":2}]},)"
      R"({"id":14,"replay_of":null,"chain":[{"key":"k1","status":200,"verdict":"ok","ms":2}]}]})");
  RunResult result = replay({"12", "--key", "k0"});
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  EXPECT_NE(result.out.find("\nkey           k1 (k0:429,k1:200)             k0 (--key)\n"), std::string::npos)
      << result.out;
}

TEST_F(ReplayCommand, AnErrorAnswerExitsOne) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  instance.answer(429, {R"({"error":{"message":"Rate limit reached"}})"});
  RunResult result = replay({"12", "--key", "k0"});
  EXPECT_EQ(result.exit_code, 1) << result.all_output();
  EXPECT_NE(result.out.find("HTTP 429"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Rate limit reached"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\nstatus        200                            429\n"), std::string::npos)
      << result.out;
}

TEST_F(ReplayCommand, ABase64BodyIsDecodedBeforeItIsSent) {
  // "\xff{}" is not UTF-8, so the capture holds it as base64.
  instance.serve_capture(12, capture_json(12, R"("body":"/3t9","body_base64":true,"body_truncated":false,)"));
  RunResult result = replay({"12"});
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  ASSERT_TRUE(instance.replayed());
  EXPECT_EQ(instance.replayed()->body, "\xff{}");
}

TEST_F(ReplayCommand, RefusesACaptureWhoseBodyWasTruncated) {
  instance.serve_capture(
      12, capture_json(12, R"("body":"{\"model\":","body_base64":false,"body_truncated":true,)"));
  RunResult result = replay({"12"});
  EXPECT_EQ(result.exit_code, 2) << result.all_output();
  EXPECT_NE(result.err.find("capture 12 kept only the first 9 of its 80-byte request body"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(instance.replayed()) << "nothing was sent";
}

TEST_F(ReplayCommand, RefusesABodyThatIsNotBase64) {
  instance.serve_capture(
      12, capture_json(12, R"("body":"not base64!","body_base64":true,"body_truncated":false,)"));
  RunResult result = replay({"12"});
  EXPECT_EQ(result.exit_code, 2) << result.all_output();
  EXPECT_NE(result.err.find("capture 12's request body is marked base64 but does not decode"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(instance.replayed());
}

TEST_F(ReplayCommand, AnUnknownIdIsNamedWithTheInstancesReason) {
  instance.serve_capture(12, capture_json(12, plain_body()));
  RunResult result = replay({"99"});
  EXPECT_EQ(result.exit_code, 2) << result.all_output();
  EXPECT_NE(result.err.find("keyshim: error: no capture 99 on " + instance.address() +
                            ": no capture 99: the ring holds 3..202"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(instance.replayed());
}

TEST_F(ReplayCommand, SaysSoWhenNoInstanceAnswers) {
  const std::string nowhere = "127.0.0.1:" + std::to_string(keyshim::test::unused_loopback_port());
  RunResult result = replay({"12", "--listen", nowhere});
  EXPECT_EQ(result.exit_code, 2) << result.all_output();
  EXPECT_NE(result.err.find("keyshim: error: no keyshim answering on " + nowhere), std::string::npos)
      << result.err;
}

TEST_F(ReplayCommand, AWrongClientTokenIsRefusedClearly) {
  std::string other =
      m_dir.write("other.toml",
                  "[server]\nlisten = \"" + instance.address() +
                      "\"\nclient_token = \"some-other-token\"\n\n[upstream]\nbase_url = "
                      "\"http://127.0.0.1:9\"\n\n[[keys]]\nlabel = \"k0\"\nkey = \"sk-x-0\"\n",
                  0600);
  std::vector<std::string> args = {KEYSHIM_BINARY, "replay", "12", "-c", other};
  RunResult result = keyshim::test::run_binary(args, options());
  EXPECT_EQ(result.exit_code, 2) << result.all_output();
  EXPECT_NE(result.err.find("refused the client_token from " + other), std::string::npos) << result.err;
  EXPECT_EQ(result.all_output().find("some-other-token"), std::string::npos);
}

TEST_F(ReplayCommand, AnIdThatIsNotAPositiveNumberIsAUsageError) {
  for (const char* bad : {"0", "-1", "abc"}) {
    RunResult result = replay({bad});
    EXPECT_EQ(result.exit_code, 2) << bad << ": " << result.all_output();
  }
  EXPECT_FALSE(instance.replayed());
}

// The whole path through a real `keyshim serve`: the replay reaches the
// upstream on the key --key names (round-robin would have chosen the other
// first), without either keyshim field, and keyshim logs it as a replay.
TEST_F(ReplayCommand, ThroughARealKeyshimTheNamedKeyServesAndTheFieldsStayBehind) {
  keyshim::test::FakeUpstream upstream;
  upstream.push(keyshim::test::json(200, R"({"usage":{"prompt_tokens":11,"completion_tokens":7}})"));
  const int port = keyshim::test::unused_loopback_port();
  std::string served = m_dir.write(
      "served.toml",
      "[server]\nclient_token = \"" + std::string(k_replay_token) + "\"\n\n[upstream]\nbase_url = \"" +
          upstream.base_url() +
          "\"\nstrategy = \"round-robin\"\n\n[[keys]]\nlabel = \"k0\"\nkey = "
          "\"sk-replay-test-key-0\"\n\n[[keys]]\nlabel = \"k1\"\nkey = \"sk-replay-test-key-1\"\n",
      0600);
  RunOptions serve_options = options();
  serve_options.timeout = 60s;
  ChildProcess serve = ChildProcess::start(
      {KEYSHIM_BINARY, "serve", "-c", served, "--listen", "127.0.0.1:" + std::to_string(port)},
      serve_options);
  ASSERT_TRUE(serve.wait_for_stderr("listening on")) << serve.err();
  instance.serve_capture(12, capture_json(12, plain_body()));
  instance.forward_to(port);

  RunResult result = replay({"12", "--key", "k1"});
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  ASSERT_EQ(upstream.request_count(), 1u) << result.all_output();
  keyshim::test::SeenRequest seen = upstream.seen().at(0);
  EXPECT_EQ(seen.header("Authorization"), "Bearer sk-replay-test-key-1");
  EXPECT_FALSE(seen.has_header("keyshim-key"));
  EXPECT_FALSE(seen.has_header("keyshim-replay"));
  EXPECT_EQ(seen.body, k_body);
  EXPECT_NE(result.out.find("\nusage         in 10, out 20                  in 11, out 7\n"),
            std::string::npos)
      << result.out;
  EXPECT_TRUE(serve.wait_for_stderr("key=k1 replay=12")) << serve.err();
  serve.send_signal(SIGTERM);
  RunResult ended = serve.wait();
  EXPECT_EQ(ended.all_output().find("sk-replay-test-key"), std::string::npos);
  EXPECT_EQ(ended.all_output().find(k_replay_token), std::string::npos);
}

// A real `keyshim serve` of keys k0 and k1 on `upstream` (with `capture`
// when set), and the request that fails over from k0 to k1 and is capture 1.
struct FailedOverServe {
  FailedOverServe(const TempDir& dir, const RunOptions& options, const keyshim::test::FakeUpstream& upstream,
                  const std::string& capture)
      : port(keyshim::test::unused_loopback_port()), listen("127.0.0.1:" + std::to_string(port)),
        path(dir.write("served.toml",
                       "[server]\nclient_token = \"" + std::string(k_replay_token) +
                           "\"\n\n[upstream]\nbase_url = \"" + upstream.base_url() + "\"\n" +
                           (capture.empty() ? "" : "capture = \"" + capture + "\"\n") +
                           "\n[[keys]]\nlabel = \"k0\"\nkey = \"sk-replay-test-key-0\"\n\n"
                           "[[keys]]\nlabel = \"k1\"\nkey = \"sk-replay-test-key-1\"\n",
                       0600)),
        serve(ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", path, "--listen", listen}, options)),
        client("127.0.0.1", port) {
    client.set_read_timeout(20, 0);
  }

  // True when serve listens and the first request got its 200.
  ::testing::AssertionResult failed_over() {
    if (!serve.wait_for_stderr("listening on")) {
      return ::testing::AssertionFailure() << serve.err();
    }
    auto first = client.Post("/v1/chat/completions", auth, R"({"model":"gpt-4o"})", "application/json");
    if (!first || first->status != 200) {
      return ::testing::AssertionFailure() << "first request: " << (first ? first->body : "no answer");
    }
    return ::testing::AssertionSuccess();
  }

  RunResult replay(std::vector<std::string> extra, const RunOptions& options) const {
    std::vector<std::string> args = {KEYSHIM_BINARY, "replay", "1", "-c", path, "--listen", listen};
    args.insert(args.end(), extra.begin(), extra.end());
    return keyshim::test::run_binary(args, options);
  }

  // Stops serve; no key reached its output.
  ::testing::AssertionResult stopped_without_keys() {
    serve.send_signal(SIGTERM);
    std::string output = serve.wait().all_output();
    return output.find("sk-replay-test-key") == std::string::npos ? ::testing::AssertionSuccess()
                                                                  : ::testing::AssertionFailure()
                                                                        << "a key in serve's output:\n"
                                                                        << output;
  }

  int port;
  std::string listen;
  std::string path;
  ChildProcess serve;
  httplib::Client client;
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + k_replay_token}};
};

RunOptions serve_options(RunOptions options) {
  options.timeout = 60s;
  return options;
}

// The whole loop against real captures: a request fails over from k0 to k1
// and is captured; replaying it on k0 is captured again, naming the first.
TEST_F(ReplayCommand, AReplayOfARealCaptureIsItselfCapturedAsItsReplay) {
  keyshim::test::FakeUpstream upstream;
  upstream.push(keyshim::test::json(429, R"({"error":{"message":"slow down"}})"));
  upstream.push(keyshim::test::json(200, R"({"first":true})"));
  upstream.push(keyshim::test::json(200, R"({"replayed":true})"));
  FailedOverServe serve(m_dir, serve_options(options()), upstream, "all");
  ASSERT_TRUE(serve.failed_over());

  RunResult result = serve.replay({"--key", "k0"}, options());
  EXPECT_EQ(result.exit_code, 0) << result.all_output();
  EXPECT_NE(result.out.find(R"({"replayed":true})"), std::string::npos) << result.out;
  ASSERT_EQ(upstream.request_count(), 3u);
  EXPECT_EQ(upstream.seen().at(2).header("Authorization"), "Bearer sk-replay-test-key-0");

  auto second = serve.client.Get("/captures/2", serve.auth);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->status, 200) << second->body;
  std::optional<keyshim::util::Json> entry = keyshim::util::parse_json(second->body);
  ASSERT_TRUE(entry);
  ASSERT_NE(entry->find("replay_of"), nullptr);
  EXPECT_EQ(entry->find("replay_of")->as_unsigned(), 1u) << second->body;
  EXPECT_EQ(second->body.find("sk-replay-test-key"), std::string::npos);
  EXPECT_TRUE(serve.stopped_without_keys());
}

// Under capture = "errors" a replay that succeeds is not captured: the key
// row must not name the key of an earlier replay of the same capture.
TEST_F(ReplayCommand, AnUncapturedReplayDoesNotClaimTheKeyOfAnEarlierReplay) {
  keyshim::test::FakeUpstream upstream;
  upstream.push(keyshim::test::json(429, R"({"error":{"message":"slow down"}})"));
  upstream.push(keyshim::test::json(200, R"({"first":true})"));
  upstream.push(keyshim::test::json(500, R"({"error":{"message":"boom"}})"));
  upstream.push(keyshim::test::json(200, R"({"second":true})"));
  FailedOverServe serve(m_dir, serve_options(options()), upstream, "");
  ASSERT_TRUE(serve.failed_over());

  RunResult failed = serve.replay({"--key", "k0"}, options());
  EXPECT_EQ(failed.exit_code, 1) << failed.all_output();
  RunResult chosen = serve.replay({}, options());
  EXPECT_EQ(chosen.exit_code, 0) << chosen.all_output();
  ASSERT_EQ(upstream.request_count(), 4u);
  EXPECT_EQ(upstream.seen().at(3).header("Authorization"), "Bearer sk-replay-test-key-1");
  const std::size_t row = chosen.out.find("\nkey ");
  ASSERT_NE(row, std::string::npos) << chosen.out;
  const std::string key_row = chosen.out.substr(row + 1, chosen.out.find('\n', row + 1) - row - 1);
  EXPECT_NE(key_row.find("chosen by keyshim"), std::string::npos) << key_row;
  EXPECT_TRUE(serve.stopped_without_keys());
}

} // namespace
