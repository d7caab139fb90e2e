#pragma once
// A real HTTP proxy for end-to-end tests: Debian's tinyproxy (tinyproxy-bin,
// installed by tools/install-deps), run in the foreground on a free
// 127.0.0.1 port with its configuration in a private temporary directory.
// Its log goes to its stdout, which the fixture reads; destruction kills it.
//
//   TinyProxyOptions options;
//   options.connect_ports = {upstream.port()};
//   TinyProxy proxy(options);
//   ... proxy = "http://127.0.0.1:<proxy.port()>" ...
//   EXPECT_TRUE(proxy.wait_for_log("CONNECT localhost:"));
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::test {

struct TinyProxyOptions {
  std::vector<int> connect_ports; // CONNECT only to these ports (403 otherwise); empty: any port
  std::string user;               // with `password`: BasicAuth, so CONNECT needs them (407 otherwise)
  std::string password;
};

class TinyProxy {
public:
  // Starts it and waits (bounded) until it accepts connections. Throws
  // std::runtime_error when tinyproxy is missing or does not come up.
  explicit TinyProxy(TinyProxyOptions options = {});
  TinyProxy(const TinyProxy&) = delete;
  TinyProxy& operator=(const TinyProxy&) = delete;

  int port() const { return m_port; }
  // "127.0.0.1:PORT".
  std::string address() const { return "127.0.0.1:" + std::to_string(m_port); }

  // Read its log until `needle` appears or `timeout` passes. True when it appeared.
  bool wait_for_log(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Its log so far, after reading whatever is waiting in the pipe.
  std::string log();

private:
  TempDir m_dir;
  std::optional<ChildProcess> m_child;
  int m_port = 0;
};

// A loopback port nothing listens on right now (bind port 0, close).
int free_loopback_port();

} // namespace keyshim::test
