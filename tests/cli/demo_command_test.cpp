// `keyshim demo --once` run as a black box: one streamed request fails over
// from a rate-limited and a revoked demo key to the healthy one, and the
// output shows the stream, the chain and the status table.
#include "support/run_binary.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

using keyshim::test::RunOptions;
using keyshim::test::RunResult;

namespace {

using namespace std::chrono_literals;

RunResult demo(const std::string& listen) {
  RunOptions options;
  options.timeout = 60s;
  options.unset_env = {"NO_COLOR"};
  return keyshim::test::run_binary({KEYSHIM_BINARY, "demo", "--once", "--listen", listen}, options);
}

// A listening socket on 127.0.0.1 that keeps its port taken while it lives.
class TakenPort {
public:
  TakenPort() {
    m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(m_fd, 1) == 0 &&
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      m_port = ntohs(addr.sin_port);
    }
  }
  ~TakenPort() { ::close(m_fd); }
  TakenPort(const TakenPort&) = delete;
  TakenPort& operator=(const TakenPort&) = delete;
  int port() const { return m_port; }

private:
  int m_fd = -1;
  int m_port = 0;
};

} // namespace

TEST(DemoCommand, OnceStreamsThroughTheFailoverAndShowsChainAndTable) {
  RunResult result = demo("127.0.0.1:0");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string& out = result.out;
  EXPECT_NE(out.find("Hello from the healthy key! keyshim moved past the rate-limited and the revoked key"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("failover chain: ratelimited:429 \u2192 revoked:401 \u2192 healthy:200"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("chain=ratelimited:429,revoked:401,healthy:200"), std::string::npos) << out;
  EXPECT_NE(out.find("LABEL"), std::string::npos) << out;
  EXPECT_NE(out.find("RESUMES IN"), std::string::npos) << out;
  EXPECT_NE(out.find("4 keys: 3 available, 0 cooling, 1 disabled"), std::string::npos) << out;
  EXPECT_NE(out.find("ratelimited  429  -> now available, but model demo is cooling on it for "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  model demo  "), std::string::npos) << out;
  EXPECT_NE(
      out.find("POST /team/v1/chat/completions goes to the second pool, \"team\", and its own key: 200"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("pool default at / -> "), std::string::npos) << out;
  EXPECT_NE(out.find("pool team at /team -> "), std::string::npos) << out;
  EXPECT_NE(out.find("POST /team/v1/chat/completions 200 pool=team model=demo key=team"), std::string::npos)
      << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << "no colour when stdout is not a terminal";
  EXPECT_EQ(out.find("curl -N"), std::string::npos) << "--once does not offer a server it is about to stop";
  EXPECT_EQ(out.find("demo-healthy-0003"), std::string::npos) << "even demo keys print as fingerprints";
  EXPECT_EQ(out.find("demo-healthy-team-0004"), std::string::npos) << "even demo keys print as fingerprints";
}

TEST(DemoCommand, TakenPortFallsBackToAFreeOne) {
  TakenPort taken;
  ASSERT_GT(taken.port(), 0);
  std::string address = "127.0.0.1:" + std::to_string(taken.port());
  RunResult result = demo(address);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("cannot listen on " + address), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("healthy:200"), std::string::npos) << result.out;
}

TEST(DemoCommand, NonLoopbackListenIsRefused) {
  RunResult result = demo("0.0.0.0:8787");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("--listen 0.0.0.0:8787"), std::string::npos) << result.err;
}
