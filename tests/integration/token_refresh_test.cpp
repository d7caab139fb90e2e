// key_cmd tokens that expire, through the built binary: a fake token
// command (a shell script counting its runs) stands for gcloud, az or a
// company's token tool; the fake upstream records the token each request
// carried (docs/behaviour.md §10).
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <sys/stat.h>

#include <functional>
#include <thread>

namespace keyshim::test {
namespace {

using namespace std::chrono_literals;

// A pool file with one key from `command` (and `key_extra` settings), then
// `more` (other keys).
std::string command_pool(const std::string& upstream, const std::string& command,
                         const std::string& key_extra, const std::string& upstream_extra = "",
                         const std::string& more = "") {
  return fmt::format(
      "[upstream]\nbase_url = \"{}\"\nconnect_timeout = \"2s\"\nfirst_byte_timeout = \"5s\"\n{}\n"
      "[[keys]]\nlabel = \"cmd\"\nkey_cmd = [\"{}\"]\n{}\n{}",
      upstream, upstream_extra, command, key_extra, more);
}

class TokenRefresh : public ::testing::Test {
protected:
  // An executable shell script in the test's directory. Its body sees N,
  // the number of this run (1 for the load's), kept in a file beside it.
  std::string command(const std::string& name, const std::string& body) {
    std::string path = dir.write(name,
                                 "#!/bin/sh\nN=$(( $(cat \"$0.runs\" 2>/dev/null || echo 0) + 1 ))\n"
                                 "echo \"$N\" > \"$0.runs\"\n" +
                                     body + "\n",
                                 0700);
    return path;
  }

  ChildProcess start(const std::string& pool_text) {
    std::string path = dir.write("keys.toml", pool_text, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = 60s;
    ChildProcess child = ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
    EXPECT_TRUE(child.wait_for_stderr("listening on")) << child.err();
    return child;
  }

  int post() {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Post("/v1/chat/completions", R"({"model":"m"})", "application/json");
    return res ? res->status : -1;
  }

  std::string status() {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get("/status");
    return res ? res->body : "";
  }

  // Checks `done` every 50 ms for up to `limit`.
  static bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      if (done()) {
        return true;
      }
      std::this_thread::sleep_for(50ms);
    }
    return done();
  }

  std::string last_token_seen() const {
    std::vector<SeenRequest> seen = upstream.seen();
    return seen.empty() ? "" : seen.back().header("Authorization");
  }

  FakeUpstream upstream;
  TempDir dir;
  int port = 0;
};

TEST_F(TokenRefresh, AnExpiringTokenIsReplacedBeforeItExpiresAndRequestsNeverGoWithout) {
  std::string cmd =
      command("token", R"(printf '{"access_token": "tok-%s-abcdefgh", "expires_in": 2}\n' "$N")");
  ChildProcess serve = start(command_pool(upstream.base_url(), cmd, ""));
  int failed = 0;
  bool replaced = eventually([&] {
    failed += post() == 200 ? 0 : 1;
    return last_token_seen() != "Bearer tok-1-abcdefgh";
  });
  ASSERT_TRUE(replaced) << serve.err();
  EXPECT_EQ(upstream.seen().front().header("Authorization"), "Bearer tok-1-abcdefgh");
  EXPECT_EQ(last_token_seen(), "Bearer tok-2-abcdefgh");
  EXPECT_EQ(failed, 0) << "the old token served until the new one arrived";
  std::string state = status();
  EXPECT_NE(state.find(R"("refreshes":)"), std::string::npos) << state;
  EXPECT_TRUE(serve.wait_for_stderr("key cmd of pool default: new token tok-")) << serve.err();
  serve.send_signal(SIGTERM);
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0);
  for (const char* token : {"tok-1-abcdefgh", "tok-2-abcdefgh", "tok-3-abcdefgh"}) {
    EXPECT_EQ(result.all_output().find(token), std::string::npos) << token;
    EXPECT_EQ(state.find(token), std::string::npos) << token;
  }
}

TEST_F(TokenRefresh, A401ToAnOldTokenRunsTheCommandAndRetriesOnTheSameKey) {
  std::string cmd = command("token", R"(echo "tok-$N-abcdefgh")");
  // Had the retry gone to the other key, or counted as a second attempt,
  // the client would get the 401: the static key is refused as well.
  upstream.require_key("Authorization", "Bearer tok-2-abcdefgh");
  ChildProcess serve = start(command_pool(upstream.base_url(), cmd, "", "max_attempts = 1\n",
                                          "[[keys]]\nlabel = \"static\"\nkey = \"sk-static-0123456789\"\n"));
  EXPECT_EQ(post(), 200);
  std::vector<SeenRequest> seen = upstream.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer tok-1-abcdefgh");
  EXPECT_EQ(seen[1].header("Authorization"), "Bearer tok-2-abcdefgh");
  EXPECT_TRUE(serve.wait_for_stderr("chain=cmd:401,cmd:200")) << serve.err();
  EXPECT_NE(serve.err().find("key cmd answered 401: its key_cmd runs for a new token"), std::string::npos);
  std::string state = status();
  EXPECT_NE(state.find(R"("label":"cmd","fingerprint":"tok-)"), std::string::npos) << state;
  EXPECT_NE(state.find(R"("state":"available")"), std::string::npos) << state;
  EXPECT_EQ(post(), 200) << "the new token serves the next request at once";
  EXPECT_EQ(upstream.request_count(), 3u);
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().all_output().find("tok-2-abcdefgh"), std::string::npos);
}

TEST_F(TokenRefresh, ASecond401OnTheNewTokenDisablesTheKeyAsUsual) {
  std::string cmd = command("token", R"(echo "tok-$N-abcdefgh")");
  upstream.require_key("Authorization", "Bearer nothing-we-have");
  ChildProcess serve = start(command_pool(upstream.base_url(), cmd, "", "max_attempts = 1\n"));
  EXPECT_EQ(post(), 401);
  EXPECT_EQ(upstream.request_count(), 2u) << "one retry with the new token, no more";
  std::string state = status();
  EXPECT_NE(state.find(R"("state":"disabled")"), std::string::npos) << state;
  serve.send_signal(SIGTERM);
  serve.wait();
}

TEST_F(TokenRefresh, AFailingCommandLeavesTheKeyCoolingWithItsFirstStderrLine) {
  std::string cmd = command("token", R"(if [ "$N" = 1 ]; then
  printf '{"access_token": "tok-%s-abcdefgh", "expires_in": 1}\n' "$N"
else
  echo 'ERROR: (gcloud.auth.print-access-token) Reauthentication failed. tok-1-abcdefgh' >&2
  echo 'second line' >&2
  exit 1
fi)");
  ChildProcess serve = start(command_pool(upstream.base_url(), cmd, ""));
  std::string state;
  ASSERT_TRUE(eventually([&] {
    state = status();
    return state.find(R"("state":"cooling")") != std::string::npos;
  })) << state
      << serve.err();
  EXPECT_NE(
      state.find(R"("reason":"key_cmd: ERROR: (gcloud.auth.print-access-token) Reauthentication failed. )"
                 R"(tok-~)"),
      std::string::npos)
      << state;
  EXPECT_EQ(state.find("second line"), std::string::npos);
  EXPECT_EQ(post(), 503) << "no key has a token";
  serve.send_signal(SIGTERM);
  RunResult result = serve.wait();
  EXPECT_NE(result.err.find("cooling until its next run: key_cmd: ERROR"), std::string::npos) << result.err;
  EXPECT_EQ(result.all_output().find("tok-1-abcdefgh"), std::string::npos);
  EXPECT_EQ(state.find("tok-1-abcdefgh"), std::string::npos);
}

} // namespace
} // namespace keyshim::test
