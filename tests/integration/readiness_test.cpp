// `keyshim serve` under Type=notify: the built binary with NOTIFY_SOCKET
// pointing at a datagram socket the test reads, as systemd's would be.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace keyshim::test {
namespace {

using std::chrono::steady_clock;

// The service manager's end: an AF_UNIX datagram socket in a temporary
// directory, read with a bounded wait.
class NotifySocket {
public:
  explicit NotifySocket(const std::string& path) : m_path(path) {
    m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    EXPECT_LT(path.size(), sizeof address.sun_path);
    EXPECT_EQ(::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << std::strerror(errno);
  }
  ~NotifySocket() { ::close(m_fd); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return m_path; }

  // Messages until one contains `needle` (all of them, that one last), or
  // "" when none does before `timeout`.
  std::string wait_for(const std::string& needle,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
      pollfd fd{m_fd, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(std::max<long long>(left.count(), 0))) <= 0) {
        continue;
      }
      char buffer[4096];
      ssize_t got = ::recv(m_fd, buffer, sizeof buffer, 0);
      if (got <= 0) {
        continue;
      }
      std::string message(buffer, static_cast<std::size_t>(got));
      received.push_back(message);
      if (message.find(needle) != std::string::npos) {
        return message;
      }
    }
    return {};
  }

  std::vector<std::string> received;

private:
  std::string m_path;
  int m_fd = -1;
};

class Readiness : public ::testing::Test {
protected:
  ChildProcess start(int keys) {
    std::string text = pool_toml(keys);
    text.replace(text.find("@UPSTREAM@"), 10, upstream.base_url());
    pool = dir.write("keys.toml", text, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.env = {{"NOTIFY_SOCKET", notify.path()}};
    options.timeout = std::chrono::seconds(60);
    return ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", pool, "--listen", fmt::format("127.0.0.1:{}", port)}, options);
  }

  FakeUpstream upstream;
  TempDir dir;
  NotifySocket notify{dir.path() + "/notify"};
  std::string pool;
  int port = 0;
};

TEST_F(Readiness, ReadyOnceServingThenReloadingAroundSighupAndStoppingAtDrain) {
  ChildProcess serve = start(3);
  std::string ready = notify.wait_for("READY=1");
  ASSERT_NE(ready, "") << serve.err();
  EXPECT_NE(ready.find("STATUS=3 keys: 3 available"), std::string::npos) << ready;
  // READY=1 means served: a request right after it is answered.
  httplib::Client client("127.0.0.1", port);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  serve.send_signal(SIGHUP);
  ASSERT_NE(notify.wait_for("RELOADING=1"), "") << serve.err();
  EXPECT_NE(notify.wait_for("READY=1"), "") << serve.err();

  serve.send_signal(SIGTERM);
  EXPECT_NE(notify.wait_for("STOPPING=1"), "") << serve.err();
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(Readiness, StatusFollowsKeyHealth) {
  upstream.push({429, {{"Content-Type", "application/json"}, {"Retry-After", "600"}}, {"{}"}, false});
  ChildProcess serve = start(2);
  ASSERT_NE(notify.wait_for("READY=1"), "") << serve.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(30));
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(notify.wait_for("STATUS=2 keys: 1 available, 1 cooling"), "") << serve.err();
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(Readiness, AnUnusablePoolFileIsReadyAndSaysSo) {
  RunOptions options;
  options.env = {{"NOTIFY_SOCKET", notify.path()}};
  options.timeout = std::chrono::seconds(60);
  port = unused_loopback_port();
  ChildProcess serve = ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", dir.path() + "/missing.toml",
                                            "--listen", fmt::format("127.0.0.1:{}", port)},
                                           options);
  std::string ready = notify.wait_for("READY=1");
  EXPECT_NE(ready.find("STATUS=serving 503s: "), std::string::npos) << ready;
  EXPECT_NE(ready.find("missing.toml"), std::string::npos) << ready;
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

} // namespace
} // namespace keyshim::test
