// `keyshim serve` as a user runs it: the built binary, real signals.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>

namespace keyshim::test {
namespace {

class ServeBinary : public ::testing::Test {
protected:
  std::string write_pool(const std::string& toml) {
    std::string text = toml;
    const std::string marker = "@UPSTREAM@";
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.replace(at, marker.size(), upstream.base_url());
    }
    return dir.write("keys.toml", text, 0600);
  }

  ChildProcess start(const std::string& pool_path, const std::vector<std::string>& extra = {}) {
    port = unused_loopback_port();
    std::vector<std::string> argv = {KEYSHIM_BINARY, "serve",    "-c",
                                     pool_path,      "--listen", "127.0.0.1:" + std::to_string(port)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    ChildProcess child = ChildProcess::start(argv, options);
    EXPECT_TRUE(child.wait_for_stderr("listening on")) << child.err();
    return child;
  }

  FakeUpstream upstream;
  TempDir dir;
  int port = 0;
};

Scripted slow_stream(std::chrono::milliseconds gap) {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = {"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"};
  s.piece_delay = gap;
  return s;
}

TEST_F(ServeBinary, SigtermLetsAnInFlightStreamFinishThenExitsZero) {
  upstream.push(slow_stream(std::chrono::milliseconds(400)));
  ChildProcess serve = start(write_pool(pool_toml(1)));
  RawConnection conn(port);
  conn.send(make_request("POST", "/v1/chat/completions", "{}"));
  ASSERT_TRUE(conn.read_until("data: 1"));
  serve.send_signal(SIGTERM);
  ASSERT_TRUE(serve.wait_for_stderr("shutting down"));
  ASSERT_TRUE(conn.read_response(10s));
  RawResponse res = parse_response(conn.received());
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(res.body, "data: 1\n\ndata: 2\n\ndata: 3\n\n");
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST_F(ServeBinary, DrainTimeoutCutsWhatIsStillStreaming) {
  Scripted held = slow_stream(std::chrono::milliseconds(0));
  held.hold_after_first_piece = true;
  upstream.push(held);
  ChildProcess serve = start(write_pool(pool_toml(1, "", "drain_timeout = \"300ms\"\n")));
  RawConnection conn(port);
  conn.send(make_request("POST", "/v1/chat/completions", "{}"));
  ASSERT_TRUE(conn.read_until("data: 1"));
  serve.send_signal(SIGTERM);
  ASSERT_TRUE(conn.read_to_close(10s));
  EXPECT_FALSE(parse_response(conn.received()).complete);
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("drain timeout"), std::string::npos) << result.err;
}

TEST_F(ServeBinary, SecondSignalExitsAtOnce) {
  Scripted held = slow_stream(std::chrono::milliseconds(0));
  held.hold_after_first_piece = true;
  upstream.push(held);
  ChildProcess serve = start(write_pool(pool_toml(1)));
  RawConnection conn(port);
  conn.send(make_request("POST", "/v1/chat/completions", "{}"));
  ASSERT_TRUE(conn.read_until("data: 1"));
  serve.send_signal(SIGINT);
  ASSERT_TRUE(serve.wait_for_stderr("shutting down"));
  serve.send_signal(SIGINT);
  RunResult result = serve.wait();
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("exiting now"), std::string::npos) << result.err;
}

TEST_F(ServeBinary, SighupReloadsThePoolFile) {
  std::string path = write_pool(pool_toml(1));
  ChildProcess serve = start(path);
  write_pool(pool_toml(3));
  serve.send_signal(SIGHUP);
  ASSERT_TRUE(serve.wait_for_stderr("reloaded")) << serve.err();
  httplib::Client client("127.0.0.1", port);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_NE(health->body.find("\"total\":3"), std::string::npos) << health->body;
  ::chmod(path.c_str(), 0644); // a too-open file is rejected, the pool stays
  serve.send_signal(SIGHUP);
  ASSERT_TRUE(serve.wait_for_stderr("reload rejected")) << serve.err();
  EXPECT_NE(client.Get("/health")->body.find("\"total\":3"), std::string::npos);
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

// The keys in serve's memory: no core dump, and (visible only to a non-root
// test run) /proc/PID belongs to root, so same-user processes cannot ptrace
// serve or read /proc/PID/mem.
TEST_F(ServeBinary, ServeWritesNoCoreDumpAndIsNotDumpable) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &before), 0);
  rlimit allowed = before; // as a developer's shell with `ulimit -c unlimited` would pass on
  allowed.rlim_cur = allowed.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &allowed), 0);
  ChildProcess serve = start(write_pool(pool_toml(1)));
  ::setrlimit(RLIMIT_CORE, &before);

  std::string proc = "/proc/" + std::to_string(serve.pid());
  std::string limits = read_file(proc + "/limits");
  EXPECT_TRUE(std::regex_search(limits, std::regex("Max core file size +0 +0 +bytes"))) << limits;
  EXPECT_GT(allowed.rlim_cur, 0u) << "the test could not give serve a core limit to drop";
  struct stat owner {};
  ASSERT_EQ(::stat(proc.c_str(), &owner), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(owner.st_uid, 0u) << "serve is still dumpable";
  }
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(ServeBinary, ReloadNamesASettingThatNeedsARestart) {
  port = unused_loopback_port();
  std::string path = write_pool(pool_toml(1, "", fmt::format("listen = \"127.0.0.1:{}\"\n", port)));
  ChildProcess serve = ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", path});
  ASSERT_TRUE(serve.wait_for_stderr("listening on http://127.0.0.1:" + std::to_string(port))) << serve.err();
  write_pool(pool_toml(1, "", fmt::format("listen = \"127.0.0.1:{}\"\n", port + 1)));
  serve.send_signal(SIGHUP);
  ASSERT_TRUE(serve.wait_for_stderr("keyshim stays on 127.0.0.1:" + std::to_string(port))) << serve.err();
  httplib::Client client("127.0.0.1", port);
  EXPECT_TRUE(client.Get("/health")) << "still serving on the old address";
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(ServeBinary, UnusablePoolFileStillServesExplaining503s) {
  ChildProcess serve = start(dir.path() + "/missing.toml");
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("missing.toml"), std::string::npos) << res->body;
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(ServeBinary, APoolNamedLikeAnApiVersionIsRefusedAndNothingIsRelayed) {
  // Served, pool v1 would take the default pool's /v1/chat/completions.
  std::string path =
      write_pool(pool_toml(1) + pool_section("v1", "@UPSTREAM@", "", {{"v1-key", "sk-v1-0001"}}));
  ChildProcess serve = start(path);
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("[pools.v1]: \\\"v1\\\" reads as an API version"), std::string::npos) << res->body;
  EXPECT_EQ(upstream.request_count(), 0u);
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(ServeBinary, PortAlreadyInUseIsAClearStartupError) {
  httplib::Server other;
  int taken = other.bind_to_any_port("127.0.0.1");
  RunResult result = run_binary({KEYSHIM_BINARY, "serve", "-c", write_pool(pool_toml(1)), "--listen",
                                 "127.0.0.1:" + std::to_string(taken)});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("cannot listen on 127.0.0.1:" + std::to_string(taken)), std::string::npos)
      << result.err;
}

TEST_F(ServeBinary, NonLoopbackListenIsRefusedAtStart) {
  RunResult result =
      run_binary({KEYSHIM_BINARY, "serve", "-c", write_pool(pool_toml(1)), "--listen", "0.0.0.0:8787"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("loopback"), std::string::npos) << result.err;
}

TEST_F(ServeBinary, JsonLogsCarryTheRequestFieldsAndNoKeys) {
  upstream.push({429, {{"Content-Type", "application/json"}, {"Retry-After", "30"}}, {"{}"}, false});
  ChildProcess serve = start(write_pool(pool_toml(2)), {"--log-format", "json"});
  httplib::Client client("127.0.0.1", port);
  ASSERT_EQ(client.Post("/v1/chat/completions", "{}", "application/json")->status, 200);
  ASSERT_TRUE(serve.wait_for_stderr("\"chain\":\"k0:429,k1:200\"")) << serve.err();
  serve.send_signal(SIGTERM);
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.err.find("\"status\":200"), std::string::npos);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(result.all_output().find(test_key(i)), std::string::npos);
  }
}

} // namespace
} // namespace keyshim::test
