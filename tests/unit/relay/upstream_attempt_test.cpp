// UpstreamAttempt on a real socket: a read that completed before the
// exchange abandoned the attempt (its completion still on its way through
// the loop) must not parse body bytes into the client's piece buffer, which
// the connection's next exchange uses, or which went with the connection.
// Through TLS, whose reads complete at once when a record is already
// received, so the order is the test's and no timing decides it.
#include "relay/upstream_attempt.hpp"
#include "support/http_raw_tls_upstream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <future>
#include <memory>
#include <string>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

// What the attempt reported.
struct RecordedEvents final : AttemptEvents {
  void attempt_connecting() override {}
  void attempt_sending() override {}
  void attempt_head() override { head = true; }
  void attempt_body(std::string_view piece, bool) override { body += piece; }
  void attempt_body_failed(std::string_view, const std::string& e) override { error = e; }
  void attempt_failed(policy::TransportFailure, const std::string& e) override { error = e; }

  bool head = false;
  std::string body;
  std::string error;
};

class SteadyMono final : public util::MonoClock {
public:
  MonoTime now() const override { return std::chrono::steady_clock::now(); }
};

// Runs `ioc` until `done()`, for at most 10 s.
template <class Done> bool run_until(asio::io_context& ioc, Done done) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    ioc.restart(); // after a moment with nothing pending
    ioc.run_one_for(100ms);
  }
  return done();
}

TEST(UpstreamAttemptRead, AReadCompletedBeforeTheAttemptWasAbandonedWritesNothingIntoThePieceBuffer) {
  std::promise<void> send_more;
  std::promise<void> sent_more;
  std::shared_future<void> go = send_more.get_future().share();
  test::RawTlsUpstream upstream([&](test::RawTlsConnection& connection, int) {
    if (connection.read_request().empty()) {
      return;
    }
    connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
    if (go.wait_for(10s) != std::future_status::ready) {
      return; // the test failed before it
    }
    connection.write("world"); // in keyshim's socket once written: loopback
    sent_more.set_value();
    connection.read_request(); // until keyshim closes
  });
  std::future<void> more_sent = sent_more.get_future();

  asio::io_context ioc{1};
  UpstreamPool pool(ioc.get_executor());
  std::string error;
  config::KeyConfig key;
  key.label = "k0";
  key.base_url = *config::parse_upstream_url(upstream.base_url(), error);
  key.ca_file = upstream.ca_file();
  const std::string origin = UpstreamPool::origin_of(key);
  const std::string body;
  AttemptRequest request{"GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n", &body, false, nullptr,
                         &origin};
  std::array<char, 64> pieces{};
  auto events = std::make_shared<RecordedEvents>();
  SteadyMono mono;
  auto attempt = std::make_shared<UpstreamAttempt>(pool, key, std::move(request), pieces.data(),
                                                   pieces.size(), events, mono);

  attempt->start(mono.now());
  ASSERT_TRUE(run_until(ioc, [&] { return events->head || !events->error.empty(); })) << "no response head";
  ASSERT_TRUE(events->error.empty()) << events->error;
  attempt->read_body(); // "hello" came with the head
  ASSERT_TRUE(run_until(ioc, [&] { return events->body == "hello"; })) << events->body;

  send_more.set_value();
  ASSERT_EQ(more_sent.wait_for(10s), std::future_status::ready);
  attempt->read_body(); // "world" is read at once; its completion is posted
  attempt->abandon();   // the exchange moved on before the loop ran it
  pieces.fill('#');
  ioc.restart();
  ioc.poll(); // the posted completion runs
  EXPECT_EQ(std::count(pieces.begin(), pieces.end(), '#'), 64) << std::string(pieces.data(), pieces.size());
  EXPECT_EQ(events->body, "hello") << "an abandoned attempt reported a piece";
}

} // namespace
} // namespace keyshim::relay
