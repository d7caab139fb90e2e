// `keyshim top` as a black box against a real `keyshim serve`: on a
// pseudo-terminal its frames are read as rows of text (key rows, a key
// starting to cool, its countdown moving, a resize, the instance going
// away, q); through a pipe it prints one frame; with no instance it says so.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/process_probe.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "terminal_screen.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using keyshim::test::ChildProcess;
using keyshim::test::FakeUpstream;
using keyshim::test::PtyProgram;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;
using keyshim::test::TerminalScreen;

namespace {

using namespace std::chrono_literals;

constexpr const char* k_top_token = "top-test-client-token";

// A `keyshim serve` child with two keys, "first" and "second", behind a
// client_token, forwarding to a scripted fake upstream.
class TopCommand : public ::testing::Test {
protected:
  void SetUp() override {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    m_path =
        m_dir.write("keys.toml", "[server]\nlisten = \"" + address() + "\"\ndrain_timeout = \"1s\"\n" +
                                     "client_token = \"" + k_top_token + "\"\n\n[upstream]\nbase_url = \"" +
                                     m_upstream.base_url() + "\"\nconnect_timeout = \"2s\"\n\n" +
                                     "[[keys]]\nlabel = \"first\"\nkey = \"sk-top-test-key-first-0001\"\n" +
                                     "max_concurrent = 3\n\n[[keys]]\nlabel = \"second\"\n" +
                                     "key = \"sk-top-test-key-second-0002\"\n");
    RunOptions options;
    options.env = environment();
    options.timeout = 60s;
    m_serve.emplace(ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", m_path}, options));
    ASSERT_TRUE(wait_until_ready()) << m_serve->err();
  }

  void TearDown() override {
    if (m_serve) {
      stop_serve();
    }
  }

  void stop_serve() {
    m_serve->send_signal(SIGTERM);
    RunResult result = m_serve->wait();
    m_serve.reset();
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }

  // Never the developer's own pool file, terminal size or colour choice.
  std::vector<std::pair<std::string, std::string>> environment(const std::string& no_color = "") const {
    return {{"KEYSHIM_CONFIG", m_dir.path() + "/absent.toml"},
            {"HOME", m_dir.path()},
            {"XDG_RUNTIME_DIR", m_dir.path()},
            {"XDG_CONFIG_HOME", ""},
            {"TERM", "xterm"},
            {"LINES", ""},
            {"COLUMNS", ""},
            {"NO_COLOR", no_color}};
  }

  PtyProgram start_top(const std::string& no_color = "") const {
    return PtyProgram({KEYSHIM_BINARY, "top", "-c", m_path}, environment(no_color), 24, 80);
  }

  bool wait_until_ready() const { return keyshim::test::wait_for_health(m_port); }

  int forward_one_request() const {
    httplib::Client client("127.0.0.1", m_port);
    httplib::Result result =
        client.Post("/v1/chat/completions", {{"Authorization", std::string("Bearer ") + k_top_token}},
                    R"({"messages":[]})", "application/json");
    return result ? result->status : 0;
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(m_port); }

  FakeUpstream m_upstream;
  TempDir m_dir;
  int m_port = 0;
  std::string m_path;
  std::optional<ChildProcess> m_serve;
};

// The countdown on `row` after its state word: "29s" in "> first  cooling  29s ...".
std::string countdown_in(const std::string& row) {
  std::smatch match;
  return std::regex_search(row, match, std::regex("cooling +([0-9]+s)")) ? match[1].str() : "";
}

bool both_keys_available(const TerminalScreen& screen) {
  return !screen.row_with({"first", "available"}).empty() &&
         !screen.row_with({"second", "available"}).empty();
}

} // namespace

TEST_F(TopCommand, DrawsKeyRowsThenACoolingKeyWithAMovingCountdownAndQuitsOnQ) {
  PtyProgram top = start_top();
  ASSERT_TRUE(top.wait_for(both_keys_available)) << top.screen().text();
  EXPECT_NE(top.screen().row_with({"first", "available"}).find(" 0/3 "), std::string::npos)
      << top.screen().text();

  // The first key's answer is a 429 with Retry-After: 30; the request fails
  // over to the second key.
  m_upstream.push(keyshim::test::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  ASSERT_EQ(forward_one_request(), 200);
  auto cooling_row = [](const TerminalScreen& screen) { return screen.row_with({"first", "cooling"}); };
  ASSERT_TRUE(top.wait_for(
      [&](const TerminalScreen& s) {
        std::string row = cooling_row(s);
        return !countdown_in(row).empty() && row.find("429 Retry-After") != std::string::npos;
      },
      5s))
      << top.screen().text();
  std::string first = countdown_in(cooling_row(top.screen()));
  EXPECT_TRUE(first == "30s" || first == "29s" || first == "28s") << first;
  ASSERT_TRUE(top.wait_for(
      [&](const TerminalScreen& s) {
        std::string now = countdown_in(cooling_row(s));
        return !now.empty() && std::stoi(now) < std::stoi(first);
      },
      5s))
      << "the countdown did not move from " << first << ":\n"
      << top.screen().text();

  // A narrower terminal: the frame is drawn again with fewer columns.
  top.resize(24, 50);
  ASSERT_TRUE(top.wait_for(
      [](const TerminalScreen& s) {
        std::string heading = s.row_with({"LABEL", "STATE"});
        return !heading.empty() && heading.find("REQ/M") == std::string::npos &&
               !s.row_with({"first", "cooling"}).empty();
      },
      5s))
      << top.screen().text();

  // The instance goes away: top says so and keeps running.
  stop_serve();
  ASSERT_TRUE(
      top.wait_for([](const TerminalScreen& s) { return !s.row_with({"no answer for"}).empty(); }, 5s))
      << top.screen().text();

  top.type("q");
  EXPECT_EQ(top.wait_exit(5s), 0) << top.screen().text();
  EXPECT_EQ(top.output().find("sk-top-test-key"), std::string::npos) << "no key material on the screen";
}

TEST_F(TopCommand, EnterShowsTheKeysRecentRequestsFromTheCaptures) {
  m_upstream.push(keyshim::test::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  ASSERT_EQ(forward_one_request(), 200);
  PtyProgram top = start_top();
  ASSERT_TRUE(top.wait_for([](const TerminalScreen& s) {
    return !s.row_with({"first", "cooling"}).empty();
  })) << top.screen().text();
  top.type("\r");
  ASSERT_TRUE(top.wait_for(
      [](const TerminalScreen& s) {
        return !s.row_with({"key first in pool"}).empty() &&
               !s.row_with({"POST /v1/chat/completions", "first:429 cool, second:200 ok"}).empty();
      },
      5s))
      << top.screen().text();
  top.type("q");
  EXPECT_EQ(top.wait_exit(5s), 0) << top.screen().text();
  EXPECT_EQ(top.output().find("sk-top-test-key"), std::string::npos) << "no key material on the screen";
}

TEST_F(TopCommand, NoColorDrawsWithoutColours) {
  // Foreground colours are CSI 30-37 m with TERM=xterm, alone or after attributes.
  const std::regex colour("\033\\[(?:[0-9]+;)*3[0-7]m");
  for (const std::string& no_color : {std::string(), std::string("1")}) {
    PtyProgram top = start_top(no_color);
    ASSERT_TRUE(top.wait_for(both_keys_available)) << top.screen().text();
    top.type("q");
    EXPECT_EQ(top.wait_exit(5s), 0);
    EXPECT_EQ(std::regex_search(top.output(), colour), no_color.empty())
        << "NO_COLOR=" << no_color << ": " << top.output();
  }
}

TEST_F(TopCommand, WithoutATerminalPrintsOneFramePlainAndExitsZero) {
  RunOptions options;
  options.env = environment();
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "top", "-c", m_path}, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("first"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("available"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pool default at / -> " + m_upstream.base_url()), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("one frame: stdout is no terminal"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find('\033'), std::string::npos) << "no escape codes in a pipe";
}

TEST_F(TopCommand, WithoutTheClientTokenItSaysWhatIsWrongAndExitsOne) {
  RunOptions options;
  options.env = environment();
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "top", "--listen", address()}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("requires a client_token for /status"), std::string::npos) << result.err;
}

TEST_F(TopCommand, NoInstanceExitsOneAndSaysHowToStartOne) {
  int port = keyshim::test::unused_loopback_port();
  RunOptions options;
  options.env = environment();
  RunResult result = keyshim::test::run_binary(
      {KEYSHIM_BINARY, "top", "--listen", "127.0.0.1:" + std::to_string(port)}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("keyshim: error: no keyshim answering on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << result.err;
}
