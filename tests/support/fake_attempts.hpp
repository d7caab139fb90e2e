#pragma once
// Upstream attempts without an upstream: a relay::AttemptSource whose
// attempts do nothing by themselves. A test plays the upstream: it reports
// steps (sending(), connecting()), feeds a response head and body as bytes
// through a real ResponseParser (respond()), or fails the attempt, and the
// exchange hears it through the same AttemptEvents a real attempt reports
// to. Header-only: it needs the relay layer, which keyshim_test_support
// does not link.
#include "relay/upstream_attempt.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::test {

class FakeAttempt final : public relay::Attempt {
public:
  FakeAttempt(std::string key_label, relay::AttemptRequest sent, std::shared_ptr<relay::AttemptEvents> events)
      : key(std::move(key_label)), request(std::move(sent)), m_events(std::move(events)) {
    m_parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (request.head_method) {
      m_parser.skip(true);
    }
  }

  // ---- relay::Attempt: what the exchange asks
  void start(relay::MonoTime) override { started = true; }
  void read_body() override { ++reads; }
  void abandon() override {
    abandoned = true;
    m_events.reset(); // reports nothing more, like a real abandoned attempt
  }
  void finish(relay::MonoTime) override {
    finished = true;
    m_events.reset();
  }
  std::shared_ptr<relay::UpstreamConn> hand_over() override { return nullptr; }
  const relay::ResponseParser& parser() const override { return m_parser; }

  // ---- the test's side: what the upstream does. Each is a no-op once the
  // exchange has let go of the attempt (its events are gone).
  void connecting() {
    if (auto events = m_events) {
      events->attempt_connecting();
    }
  }
  void sending() {
    if (auto events = m_events) {
      events->attempt_sending();
    }
  }
  // The response head, then the body bytes that came with it (as one
  // piece) if the exchange asks for the body: attempt_head, then attempt_body.
  void respond(std::string_view bytes) {
    std::string_view body = put_head(bytes);
    const int asked = reads;
    if (auto events = m_events) {
      events->attempt_head();
    }
    if (reads > asked && !body.empty()) {
      this->body(body);
    }
  }
  // Body bytes as the upstream sends them (raw, chunk framing and all;
  // what does not parse yet waits for the next bytes, as in a real read).
  void body(std::string_view bytes) {
    m_unparsed += bytes;
    std::string piece = parse_body();
    if (auto events = m_events) {
      events->attempt_body(piece, m_parser.is_done());
    }
  }
  // The upstream connection failed before a response, or mid-body.
  void fail(policy::TransportFailure failure, const std::string& detail) {
    if (auto events = m_events) {
      events->attempt_failed(failure, detail);
    }
  }
  void body_failed(const std::string& error) {
    if (auto events = m_events) {
      events->attempt_body_failed({}, error);
    }
  }
  bool listening() const { return m_events != nullptr; }

  const std::string key; // the label of the key it was made for
  const relay::AttemptRequest request;
  bool started = false;
  bool abandoned = false;
  bool finished = false;
  int reads = 0; // read_body() calls

private:
  std::string_view put_head(std::string_view bytes) {
    relay::ErrorCode ec;
    std::size_t used = m_parser.put(relay::asio::buffer(bytes.data(), bytes.size()), ec);
    EXPECT_FALSE(ec) << "the test's response head does not parse: " << ec.message();
    EXPECT_TRUE(m_parser.is_header_done()) << "the test's response head is incomplete";
    return bytes.substr(used);
  }
  std::string parse_body() {
    std::string piece(m_unparsed.size(), '\0');
    std::size_t landed = 0;
    std::size_t parsed = 0;
    while (parsed < m_unparsed.size() && !m_parser.is_done()) {
      m_parser.get().body().data = piece.data() + landed;
      m_parser.get().body().size = piece.size() - landed;
      relay::ErrorCode ec;
      std::size_t used =
          m_parser.put(relay::asio::buffer(m_unparsed.data() + parsed, m_unparsed.size() - parsed), ec);
      landed = piece.size() - m_parser.get().body().size;
      parsed += used;
      if (ec == relay::http::error::need_more || (!ec && used == 0)) {
        break; // the rest of a chunk's framing comes with the next bytes
      }
      if (ec != relay::http::error::need_buffer) {
        EXPECT_FALSE(ec) << "the test's response body does not parse: " << ec.message();
        if (ec) {
          break;
        }
      }
    }
    m_unparsed.erase(0, parsed);
    piece.resize(landed);
    return piece;
  }

  std::shared_ptr<relay::AttemptEvents> m_events;
  relay::ResponseParser m_parser;
  std::string m_unparsed; // body bytes fed but not parsed yet
};

// Every attempt an exchange makes, in order.
class FakeAttempts final : public relay::AttemptSource {
public:
  std::shared_ptr<relay::Attempt> make(const config::KeyConfig& key, relay::AttemptRequest request, char*,
                                       std::size_t, std::shared_ptr<relay::AttemptEvents> events) override {
    made.push_back(std::make_shared<FakeAttempt>(key.label, std::move(request), std::move(events)));
    return made.back();
  }
  // Every attempt lets go of its exchange, which holds it in turn (a
  // test's tear-down: a real attempt lets go when abandoned or finished).
  void clear() {
    for (const auto& attempt : made) {
      attempt->abandon();
    }
    made.clear();
  }
  // The newest attempt (the test fails, not crashes, when there is none).
  FakeAttempt& last() {
    if (made.empty()) {
      ADD_FAILURE() << "no attempt was made";
      static FakeAttempt none{"", {}, nullptr};
      return none;
    }
    return *made.back();
  }

  std::vector<std::shared_ptr<FakeAttempt>> made;
};

} // namespace keyshim::test
