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

// One key that serves one request at a time; the next waits up to 10 s.
const char* const k_one_busy_key = R"([upstream]
base_url = "https://api.test.invalid"
max_concurrent = 1
max_wait = "10s"

[[keys]]
label = "solo"
key = "sk-exchange-test-key-solo-0003"
)";

const char* const k_ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
                         "{\"ok\":true}";
// A streamed success and its first chunk: the commit point.
const char* const k_stream_start =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n";

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

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
    bool keep_alive = request.keep_alive();
    auto exchange =
        std::make_shared<Exchange>(published.state, *route, std::move(request), keep_alive, client, context);
    exchange->start();
    return client;
  }
  // Every exchange still running lets go: its attempt, its alarm and its
  // client's pending wait hold it, and it must end while the wait room and
  // the loop it uses are still here.
  void TearDown() override {
    attempts.clear();
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
using Nexts = std::vector<Downstream::Next>;

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
  EXPECT_EQ(client->finished, Nexts{Downstream::Next::request});

  auto next = send(); // the cooling key is skipped until its Retry-After has passed
  EXPECT_EQ(keys_tried(), (Strings{"a", "b", "b"}));
  wall.advance(30s);
  auto later = send();
  EXPECT_EQ(keys_tried(), (Strings{"a", "b", "b", "a"}));
}

// docs/behaviour.md §5: no first byte within first_byte_timeout moves to the
// next key, never the same one.
TEST_F(ExchangeTest, FirstByteDeadlineFailsOverToTheNextKeyWhenTheFakeClockPassesIt) {
  serve(k_two_keys);
  auto client = send();
  attempt(0).sending(); // first_byte_timeout (30s) from here
  alarms.advance(30s - 1ms);
  EXPECT_EQ(keys_tried(), Strings{"a"}) << "the deadline has not passed yet";
  EXPECT_FALSE(attempt(0).abandoned);
  alarms.advance(1ms);
  ASSERT_EQ(keys_tried(), (Strings{"a", "b"}));
  EXPECT_TRUE(attempt(0).abandoned) << "the silent attempt is closed, not left to answer later";
  EXPECT_EQ(client->pair.read(), "") << "nothing was committed: the client has heard nothing yet";
  attempt(1).sending();
  attempt(1).respond(k_ok);
  EXPECT_EQ(client->pair.read().rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(client->finished, Nexts{Downstream::Next::request});
}

// docs/behaviour.md §5: a connection failure tries the same key once more,
// then the next key.
TEST_F(ExchangeTest, ConnectDeadlineTriesTheSameKeyOnceMoreThenTheNextKey) {
  serve(k_two_keys);
  auto client = send();
  attempt(0).connecting(); // connect_timeout (5s) from here
  alarms.advance(5s - 1ms);
  EXPECT_EQ(keys_tried(), Strings{"a"});
  alarms.advance(1ms);
  ASSERT_EQ(keys_tried(), (Strings{"a", "a"}));
  EXPECT_TRUE(attempt(0).abandoned);
  attempt(1).connecting();
  alarms.advance(5s);
  EXPECT_EQ(keys_tried(), (Strings{"a", "a", "b"}));
  EXPECT_TRUE(attempt(1).abandoned);
}

TEST_F(ExchangeTest, AFailureAfterTheCommitPointReachesTheClientAsACutStreamNeverASecondResponse) {
  serve(k_two_keys);
  auto client = send();
  attempt(0).sending();
  attempt(0).respond(k_stream_start);
  std::string got = client->pair.read();
  EXPECT_NE(got.find("5\r\nhello\r\n"), std::string::npos) << got;
  attempt(0).body_failed("connection reset by peer");
  got += client->pair.read();
  EXPECT_EQ(keys_tried(), Strings{"a"}) << "no failover after the commit point";
  EXPECT_EQ(count(got, "HTTP/1.1 "), 1u) << got;
  EXPECT_EQ(got.find("0\r\n\r\n"), std::string::npos) << "no last-chunk: the client must see an error";
  EXPECT_EQ(client->finished, Nexts{Downstream::Next::drop}) << "the connection is dropped, not reused";
}

TEST_F(ExchangeTest, ProgressMovesTheIdleDeadlineAndSilencePastItCutsTheStream) {
  serve(k_two_keys);
  auto client = send();
  attempt(0).sending();
  attempt(0).respond(k_stream_start); // committed at t=0: idle_timeout (60s) from the last progress
  client->pair.read();
  alarms.advance(40s);
  attempt(0).body("5\r\nworld\r\n"); // progress at t=40: the deadline is now t=100
  EXPECT_NE(client->pair.read().find("world"), std::string::npos);
  alarms.advance(60s - 1ms);
  EXPECT_TRUE(client->finished.empty()) << "cut before 60s of silence";
  EXPECT_FALSE(attempt(0).abandoned);
  alarms.advance(1ms);
  EXPECT_EQ(client->finished, Nexts{Downstream::Next::drop});
  EXPECT_TRUE(attempt(0).abandoned);
  EXPECT_EQ(keys_tried(), Strings{"a"});
}

TEST_F(ExchangeTest, AWaitingRequestGets503WithRetryAfterExactlyAtMaxWait) {
  serve(k_one_busy_key);
  auto first = send();
  attempt(0).sending(); // holds the only slot
  auto second = send(); // waits for it, up to max_wait (10s)
  alarms.advance(10s - 1ms);
  EXPECT_EQ(second->pair.read(), "") << "answered before max_wait was over";
  alarms.advance(1ms);
  std::string got = second->pair.read();
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 1\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("(waited 10s)"), std::string::npos) << got;
  EXPECT_EQ(second->finished, Nexts{Downstream::Next::request});
  EXPECT_EQ(keys_tried(), Strings{"solo"}) << "the waiter never got the busy key";
}

TEST_F(ExchangeTest, AWaitingRequestIsServedAsSoonAsTheBusyKeyIsReleased) {
  serve(k_one_busy_key);
  auto first = send();
  attempt(0).sending();
  auto second = send();
  alarms.advance(3s);
  EXPECT_EQ(keys_tried(), Strings{"solo"});
  attempt(0).respond(k_ok);
  first->pair.read(); // the first answer is written: its key goes back and wakes the waiter
  ASSERT_EQ(keys_tried(), (Strings{"solo", "solo"}));
  attempt(1).sending();
  attempt(1).respond(k_ok);
  EXPECT_EQ(second->pair.read().rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

TEST_F(ExchangeTest, AClientHangingUpBeforeTheResponseAbandonsTheAttemptAndFreesTheKey) {
  serve(k_two_keys);
  auto client = send();
  attempt(0).sending();
  EXPECT_EQ(pool().health(0).in_flight, 1);
  client->pair.close_far();
  client->pair.settle();
  EXPECT_FALSE(attempt(0).abandoned) << "the watch starts k_client_watch_delay in";
  alarms.advance(k_client_watch_delay);
  client->pair.settle();
  EXPECT_TRUE(attempt(0).abandoned) << "an abandoned request still costs tokens upstream";
  EXPECT_EQ(client->finished, Nexts{Downstream::Next::drop});
  EXPECT_EQ(pool().health(0).in_flight, 0);
  EXPECT_EQ(keys_tried(), Strings{"a"});
}

} // namespace
} // namespace keyshim::relay
