// A client connection's deadlines and its hand-over to the relay, driven
// directly: the client is the other end of an in-process socketpair
// (tests/support/socket_pair.hpp: no port, io_context::poll() only), the
// upstream is played by fake attempts, and time moves only when the test
// advances the fake clock its alarms ring on. Nothing sleeps.
#include "server/connection.hpp"

#include "server/connection_registry.hpp"
#include "server/own_endpoints.hpp"
#include "server/published_state.hpp"
#include "support/fake_alarms.hpp"
#include "support/fake_attempts.hpp"
#include "support/fake_clock.hpp"
#include "support/serving_state.hpp"
#include "support/socket_pair.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

const char* const k_pool = R"([upstream]
base_url = "https://api.test.invalid"

[[keys]]
label = "a"
key = "sk-connection-test-key-a-0001"
)";

const char* const k_ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
                         "{\"ok\":true}";

class NoTokens final : public relay::TokenRefresh {
public:
  void run_due() override {}
};

class ConnectionTest : public ::testing::Test {
protected:
  ConnectionTest() {
    published.publish(std::make_shared<const relay::PoolState>(test::serving_state(k_pool, wall)));
    auto connection = std::make_shared<Connection>(std::move(client.near), context);
    connection->start();
    m_connection = connection;
  }
  // A connection holds itself through its pending reads and its alarm; it
  // must end while the loop and the server's parts are still here.
  void TearDown() override {
    attempts.clear();
    alarms.clear();
    if (auto connection = m_connection.lock()) {
      connection->abort(); // as a drain that ran out: ends its exchange, which holds it, and closes
    }
    client.settle();
  }

  relay::asio::io_context ioc{1};
  test::FakeClock wall;
  test::FakeMonoClock mono;
  test::FakeAlarms alarms{mono};
  test::FakeAttempts attempts;
  relay::WaitRoom waits{mono};
  PublishedState published;
  NoTokens tokens;
  relay::CaptureRing captures;
  relay::RelayContext relay{attempts, mono, wall, alarms, waits, published, tokens, captures};
  ConnectionLimits limits; // 30 s for the head, the idle time and a body's pauses
  HeadLimits head_limits;
  config::ListenAddress listen;
  OwnEndpoints own{"keys.toml", published, listen, waits, captures};
  ConnectionRegistry registry;
  ConnectionContext context{limits, head_limits, published, own, relay, registry};
  test::SocketPair client{ioc};

private:
  std::weak_ptr<Connection> m_connection;
};

TEST_F(ConnectionTest, AHeadNotCompleteByTheHeadTimeoutGets408) {
  client.write("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n");
  alarms.advance(30s - 1ms);
  EXPECT_EQ(client.read(), "") << "answered before the head timeout";
  alarms.advance(1ms);
  std::string got = client.read();
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got;
  EXPECT_TRUE(client.closed()) << "nothing after an incomplete head is read as a request";
  EXPECT_TRUE(attempts.made.empty());
}

TEST_F(ConnectionTest, ABodyThatStallsGets408AndEachArrivingPieceMovesTheDeadline) {
  client.write(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8787\r\nContent-Type: application/json\r\n"
      "Content-Length: 20\r\n\r\n{\"messages\":");
  alarms.advance(20s);
  client.write("[]"); // progress at t=20: the body may pause until t=50
  alarms.advance(30s - 1ms);
  EXPECT_EQ(client.read(), "") << "the pause was measured from the head, not from the last piece";
  alarms.advance(1ms);
  std::string got = client.read();
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
  EXPECT_TRUE(attempts.made.empty()) << "an incomplete body is never forwarded";
}

TEST_F(ConnectionTest, AnIdleKeepAliveConnectionClosesQuietlyAtTheKeepAliveTimeout) {
  client.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n\r\n");
  std::string got = client.read();
  ASSERT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  alarms.advance(30s - 1ms);
  EXPECT_FALSE(client.closed());
  alarms.advance(1ms);
  EXPECT_TRUE(client.closed());
  EXPECT_EQ(client.received, got) << "an idle connection closes without an answer";
}

TEST_F(ConnectionTest, ARequestGoesToTheRelayAndTheConnectionThenReadsTheNextOne) {
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n"
                              "Content-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"messages\":[]}";
  client.write(request);
  ASSERT_EQ(attempts.made.size(), 1u);
  EXPECT_NE(attempts.last().request.head.find("POST /v1/chat/completions HTTP/1.1\r\n"), std::string::npos);
  EXPECT_EQ(registry.in_flight(), 1);
  attempts.last().sending();
  attempts.last().respond(k_ok);
  EXPECT_EQ(client.read().rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(registry.in_flight(), 0);

  alarms.advance(29s); // the head timeout armed before the exchange rings as a no-op meanwhile
  client.write(request);
  EXPECT_EQ(attempts.made.size(), 2u) << "the kept-alive connection read its next request";
}

} // namespace
} // namespace keyshim::server
