#pragma once
// The fixture of the `keyshim run` black-box tests: a pool file whose key
// comes from the environment, a scripted fake upstream, and helpers to
// sequence fake tools (shell scripts) through fifos.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/process_probe.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace keyshim::test::run {

using namespace std::chrono_literals;

inline constexpr const char* k_key = "sk-run-test-key-0123456789";
inline constexpr const char* k_key_variable = "KEYSHIM_RUN_TEST_KEY";

// The fake tool's call through keyshim, as the OpenAI SDKs make it: the
// base URL and key from the environment. Prints the body it got.
inline constexpr const char* k_call_through =
    "curl -sS --noproxy '*' -H \"Authorization: Bearer $OPENAI_API_KEY\" \"$OPENAI_BASE_URL/models\"";

inline bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// True when a listener could take `port` now: nothing listens there.
inline bool port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

// Let a fake tool waiting in `read line < FIFO` go on. Opening blocks until
// it reads.
inline void release(const std::string& fifo) {
  int fd = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << fifo;
  EXPECT_EQ(write(fd, "go\n", 3), 3);
  close(fd);
}

inline std::string fifo_in(const TempDir& dir, const std::string& name) {
  std::string path = dir.path() + "/" + name;
  EXPECT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

inline std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t found = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++found;
  }
  return found;
}

class RunCommand : public ::testing::Test {
protected:
  void SetUp() override {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    write_pool(m_port);
  }

  // The pool's key comes from the environment, so the command inherits a
  // variable holding it unless keyshim run removes it.
  void write_pool(int listen_port) {
    m_path = m_dir.write("keys.toml", "[server]\nlisten = \"127.0.0.1:" + std::to_string(listen_port) +
                                          "\"\ndrain_timeout = \"2s\"\n\n[upstream]\nbase_url = \"" +
                                          m_upstream.base_url() +
                                          "\"\nconnect_timeout = \"2s\"\n\n[[keys]]\nlabel = \"only\"\n"
                                          "key_env = \"" +
                                          k_key_variable + "\"\n");
  }

  // Never the developer's own pool file or proxies.
  RunOptions options() const {
    RunOptions options;
    options.env = {{"HOME", m_dir.path()}, {"XDG_RUNTIME_DIR", m_dir.path()}, {k_key_variable, k_key}};
    options.unset_env = {"KEYSHIM_CONFIG", "XDG_CONFIG_HOME", "http_proxy", "HTTP_PROXY",
                         "https_proxy",    "HTTPS_PROXY",     "all_proxy",  "ALL_PROXY"};
    options.timeout = 30s;
    return options;
  }

  std::vector<std::string> run_argv(const std::vector<std::string>& command,
                                    const std::vector<std::string>& flags = {}) const {
    std::vector<std::string> argv = {KEYSHIM_BINARY, "run", "-c", m_path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }

  RunResult run(const std::vector<std::string>& command) const {
    return keyshim::test::run_binary(run_argv(command), options());
  }

  bool wait_until_ready() const { return keyshim::test::wait_for_health(m_port); }

  void expect_one_request_with_the_pool_key() const {
    ASSERT_TRUE(m_upstream.wait_for_requests(1, 5s));
    std::vector<keyshim::test::SeenRequest> seen = m_upstream.seen();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].target, "/v1/models");
    EXPECT_EQ(seen[0].header("Authorization"), std::string("Bearer ") + k_key);
  }

  FakeUpstream m_upstream;
  TempDir m_dir;
  int m_port = 0;
  std::string m_path;
};

} // namespace keyshim::test::run
