// `keyshim log`, `keyshim show` and `keyshim capture save` run as black
// boxes against a real `keyshim serve` child that captures every exchange.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using keyshim::test::ChildProcess;
using keyshim::test::FakeUpstream;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::Scripted;
using keyshim::test::TempDir;

namespace {

using namespace std::chrono_literals;

constexpr const char* k_key_a = "sk-capture-cli-key-a-0001";
constexpr const char* k_key_b = "sk-capture-cli-key-b-0002";
constexpr const char* k_token = "capture-cli-token-0003";

class CaptureCommand : public ::testing::Test {
protected:
  void SetUp() override {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    std::string text = "[server]\nlisten = \"127.0.0.1:" + std::to_string(m_port) +
                       "\"\ndrain_timeout = \"2s\"\nclient_token = \"" + k_token +
                       "\"\n\n[upstream]\nbase_url = \"" + m_upstream.base_url() +
                       "\"\ncapture = \"all\"\n\n[[keys]]\nlabel = \"a\"\nkey = \"" + k_key_a +
                       "\"\n\n[[keys]]\nlabel = \"b\"\nkey = \"" + k_key_b + "\"\n";
    m_path = m_dir.write("keys.toml", text);
    RunOptions options = child_options();
    options.timeout = 60s;
    m_serve.emplace(ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", m_path}, options));
    ASSERT_TRUE(keyshim::test::wait_for_health(m_port)) << m_serve->err();
  }

  void TearDown() override {
    if (m_serve) {
      m_serve->send_signal(SIGTERM);
      RunResult result = m_serve->wait();
      EXPECT_EQ(result.exit_code, 0) << result.err;
    }
  }

  RunOptions child_options() const {
    RunOptions options;
    options.env = {{"KEYSHIM_CONFIG", m_dir.path() + "/absent.toml"}, {"HOME", m_dir.path()}};
    options.unset_env = {"NO_COLOR", "XDG_CONFIG_HOME"};
    return options;
  }

  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), KEYSHIM_BINARY);
    return keyshim::test::run_binary(args, child_options());
  }

  int post(const std::string& body) const {
    httplib::Client client("127.0.0.1", m_port);
    httplib::Headers headers{{"Authorization", std::string("Bearer ") + k_token}};
    auto result = client.Post("/v1/chat/completions", headers, body, "application/json");
    return result ? result->status : 0;
  }

  // Output must never carry a key or the token.
  static void expect_no_secret(const RunResult& r) {
    for (const char* secret : {k_key_a, k_key_b, k_token}) {
      EXPECT_EQ(r.all_output().find(secret), std::string::npos) << secret << " in " << r.all_output();
    }
  }

  FakeUpstream m_upstream;
  TempDir m_dir;
  int m_port = 0;
  std::string m_path;
  std::optional<ChildProcess> m_serve;
};

TEST_F(CaptureCommand, LogPrintsOneLinePerCaptureWithItsChainAndFilters) {
  m_upstream.push(keyshim::test::json(429, "{}", {{"Retry-After", "30"}}));
  m_upstream.push(keyshim::test::json(200, R"({"ok":true})"));
  ASSERT_EQ(post(R"({"model":"gpt-4o"})"), 200);
  m_upstream.push(keyshim::test::json(400, R"({"error":{"message":"no"}})"));
  ASSERT_EQ(post(R"({"model":"gpt-4o-mini"})"), 400);
  RunResult r = run({"log", "-c", m_path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("   1  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default  gpt-4o  POST /v1/chat/completions  200  a:429 cool, b:200 ok"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpt-4o-mini"), std::string::npos) << r.out;
  expect_no_secret(r);
  RunResult status = run({"status", "-c", m_path});
  EXPECT_NE(status.out.find("captures: 2 of 200 kept, "), std::string::npos) << status.out;
  RunResult only = run({"log", "-c", m_path, "--status", "400"});
  EXPECT_EQ(only.exit_code, 0) << only.err;
  EXPECT_EQ(only.out.find("a:429"), std::string::npos) << only.out;
  EXPECT_NE(only.out.find("gpt-4o-mini"), std::string::npos) << only.out;
}

TEST_F(CaptureCommand, ShowPrettyPrintsJsonAndPrintsEventsOnePerLine) {
  m_upstream.push(keyshim::test::json(200, R"({"choices":[{"text":"hi"}]})"));
  ASSERT_EQ(post(R"({"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]})"), 200);
  Scripted stream;
  stream.headers = {{"Content-Type", "text/event-stream"}};
  stream.pieces = {"data: {\"n\":1}\n\n", "event: done\ndata: {\"n\":2}\n\n"};
  m_upstream.push(stream);
  ASSERT_EQ(post(R"({"stream":true})"), 200);

  RunResult r = run({"show", "1", "-c", m_path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chain: a:200 ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  \"messages\": [\n    {\n      \"role\": \"user\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("< response\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Authorization"), std::string::npos) << r.out;
  expect_no_secret(r);

  RunResult events = run({"show", "2", "-c", m_path});
  EXPECT_EQ(events.exit_code, 0) << events.err;
  EXPECT_NE(events.out.find("\ndata: {\"n\":1}\nevent: done data: {\"n\":2}\n"), std::string::npos)
      << events.out;

  RunResult json = run({"show", "2", "--json", "-c", m_path});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{\"id\":2,", 0), 0u) << json.out;
}

TEST_F(CaptureCommand, ShowOfAnIdTheRingDoesNotHoldSaysWhatItHolds) {
  ASSERT_EQ(post("{}"), 200);
  RunResult r = run({"show", "7", "-c", m_path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no capture 7: the ring holds 1..1"), std::string::npos) << r.err;
}

TEST_F(CaptureCommand, SaveWritesTheJsonFormWithMode0600AndRefusesToOverwrite) {
  ASSERT_EQ(post(R"({"model":"gpt-4o"})"), 200);
  std::string file = m_dir.path() + "/capture-1.json";
  RunResult r = run({"capture", "save", "1", file, "-c", m_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string saved = keyshim::test::read_file(file);
  EXPECT_EQ(saved, run({"show", "1", "--json", "-c", m_path}).out);
  EXPECT_EQ(saved.find(k_key_a), std::string::npos);

  RunResult again = run({"capture", "save", "1", file, "-c", m_path});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("exists; pass --force"), std::string::npos) << again.err;
  RunResult forced = run({"capture", "save", "1", file, "--force", "-c", m_path});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(CaptureCommand, FollowPrintsNewCapturesAndStopsOnCtrlC) {
  ASSERT_EQ(post(R"({"model":"first-model"})"), 200);
  RunOptions options = child_options();
  options.timeout = 30s;
  ChildProcess follow = ChildProcess::start({KEYSHIM_BINARY, "log", "--follow", "-c", m_path}, options);
  ASSERT_TRUE(follow.wait_for_stdout("first-model"));
  ASSERT_EQ(post(R"({"model":"second-model"})"), 200);
  ASSERT_TRUE(follow.wait_for_stdout("second-model"));
  follow.send_signal(SIGINT);
  RunResult r = follow.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("first-model"), r.out.rfind("first-model")) << "printed once: " << r.out;
}

TEST_F(CaptureCommand, FollowSaysSoWhenTheInstanceGoesAway) {
  RunOptions options = child_options();
  options.timeout = 30s;
  ChildProcess follow = ChildProcess::start({KEYSHIM_BINARY, "log", "-f", "-c", m_path}, options);
  ASSERT_EQ(post("{}"), 200);
  ASSERT_TRUE(follow.wait_for_stdout("POST /v1/chat/completions"));
  m_serve->send_signal(SIGTERM);
  RunResult served = m_serve->wait();
  m_serve.reset();
  EXPECT_EQ(served.exit_code, 0) << served.err;
  RunResult r = follow.wait();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.err.find("stopped following: the keyshim on 127.0.0.1:" + std::to_string(m_port) + " went away"),
      std::string::npos)
      << r.err;
}

TEST(CaptureCommandAlone, SaysClearlyWhenNoInstanceAnswers) {
  TempDir dir;
  int port = keyshim::test::unused_loopback_port();
  std::string address = "127.0.0.1:" + std::to_string(port);
  RunOptions options;
  options.env = {{"KEYSHIM_CONFIG", dir.path() + "/absent.toml"}, {"HOME", dir.path()}};
  for (std::vector<std::string> args :
       {std::vector<std::string>{"log"}, {"show", "1"}, {"capture", "save", "1", dir.path() + "/x.json"}}) {
    args.insert(args.begin(), KEYSHIM_BINARY);
    args.insert(args.end(), {"--listen", address});
    RunResult r = keyshim::test::run_binary(args, options);
    EXPECT_EQ(r.exit_code, 1) << args[1];
    EXPECT_NE(r.err.find("no keyshim answering on " + address), std::string::npos) << r.err;
  }
}

} // namespace
