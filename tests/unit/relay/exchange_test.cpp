// The exchange's state machine driven directly: no upstream and no network.
// The test plays the upstream through fake attempts (tests/support/
// fake_attempts.hpp, real response parsing of the bytes it feeds), the
// client on the other end of an in-process socketpair (tests/support/
// socket_pair.hpp: no port, io_context::poll() only), and time on fake
// clocks whose alarms ring as the test advances them. Nothing sleeps.
#include "relay/exchange.hpp"

#include "support/fake_alarms.hpp"
#include "support/fake_attempts.hpp"
#include "support/fake_clock.hpp"
#include "support/serving_state.hpp"
#include "support/socket_pair.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

// Two keys tried in order, with short timeouts the fake clock passes.
const char* const k_two_keys = R"([upstream]
base_url = "https://api.test.invalid"
strategy = "ordered"
connect_timeout = "5s"
first_byte_timeout = "30s"
idle_timeout = "60s"

[[keys]]
label = "a"
key = "sk-exchange-test-key-a-0001"

[[keys]]
label = "b"
key = "sk-exchange-test-key-b-0002"
)";

const char* const k_ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
                         "{\"ok\":true}";

// The client's connection: one end of a socketpair, and what the exchange
// said comes next.
class TestClient final : public Downstream {
public:
  explicit TestClient(asio::io_context& ioc) : pair(ioc) {}
  Socket& socket() override { return pair.near; }
  void exchange_finished(Next next) override { finished.push_back(next); }
  std::string take_read_ahead() override { return {}; }

  test::SocketPair pair;
  std::vector<Next> finished;
};

class Published final : public StateSource {
public:
  std::shared_ptr<const PoolState> current() const override { return state; }
  std::shared_ptr<const PoolState> state;
};

class NoTokens final : public TokenRefresh {
public:
  void run_due() override {}
};

class ExchangeTest : public ::testing::Test {
protected:
  void serve(const char* toml) {
    published.state = std::make_shared<const PoolState>(test::serving_state(toml, wall));
  }
  pool::KeyPool& pool() { return *published.state->pools.at(0).keys; }

  // A client's request, started: the exchange makes its first attempt (or
  // waits, or answers) before this returns.
  std::shared_ptr<TestClient> send(std::string body = R"({"messages":[]})") {
    ClientRequest request{http::verb::post, "/v1/chat/completions", 11};
    request.set(http::field::host, "127.0.0.1:8787");
    request.set(http::field::content_type, "application/json");
    request.body() = std::move(body);
    request.prepare_payload();
    auto client = clients.emplace_back(std::make_shared<TestClient>(ioc));
    std::optional<Route> route = published.state->route(request.target());
    auto exchange = std::make_shared<Exchange>(published.state, *route, std::move(request), client, context);
    exchange->start();
    return client;
  }
  // Every exchange still running lets go: its attempt, its alarm and its
  // client's pending wait hold it, and it must end while the wait room and
  // the loop it uses are still here.
  void TearDown() override {
    attempts.made.clear();
    alarms.clear();
    for (const auto& client : clients) {
      ErrorCode ignored;
      client->pair.near.close(ignored);
    }
    ioc.restart();
    ioc.poll();
  }

  std::vector<std::string> keys_tried() const {
    std::vector<std::string> keys;
    for (const auto& attempt : attempts.made) {
      keys.push_back(attempt->key);
    }
    return keys;
  }
  test::FakeAttempt& attempt(std::size_t i) { return *attempts.made.at(i); }

  asio::io_context ioc{1};
  test::FakeClock wall;
  test::FakeMonoClock mono;
  test::FakeAlarms alarms{mono};
  test::FakeAttempts attempts;
  WaitRoom waits{mono};
  Published published;
  NoTokens tokens;
  CaptureRing captures;
  RelayContext context{attempts, mono, wall, alarms, waits, published, tokens, captures};
  std::vector<std::shared_ptr<TestClient>> clients;
};

using Strings = std::vector<std::string>;

TEST_F(ExchangeTest, RateLimitWithRetryAfterCoolsTheKeyAndTheNextKeyServes) {
  serve(k_two_keys);
  auto client = send();
  ASSERT_EQ(keys_tried(), Strings{"a"});
  attempt(0).sending();
  attempt(0).respond("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 30\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2\r\n\r\n{}");
  ASSERT_EQ(keys_tried(), (Strings{"a", "b"})) << "the 429 moved the request to the next key";
  EXPECT_TRUE(pool().cooling_for(0));
  EXPECT_EQ(pool().health(0).until, wall.now() + 30s) << "cooled for exactly what Retry-After said";
  attempt(1).sending();
  attempt(1).respond(k_ok);
  std::string response = client->pair.read();
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("{\"ok\":true}"), std::string::npos);
  EXPECT_EQ(response.find("429"), std::string::npos) << "the client saw nothing of the refused attempt";
  EXPECT_EQ(client->finished, std::vector<Downstream::Next>{Downstream::Next::request});

  auto next = send(); // the cooling key is skipped until its Retry-After has passed
  EXPECT_EQ(keys_tried(), (Strings{"a", "b", "b"}));
  wall.advance(30s);
  auto later = send();
  EXPECT_EQ(keys_tried(), (Strings{"a", "b", "b", "a"}));
}

} // namespace
} // namespace keyshim::relay
