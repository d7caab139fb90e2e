// WebSockets through the real server: the handshake fails over like any
// request until a 101 reaches the client; after it, messages cross both
// ways as sent, and a hang-up, silence or shutdown on either side closes
// the other with a close code that says why.
#include "support/http_shim.hpp"
#include "support/http_ws_peers.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace keyshim::test {
namespace {

using namespace std::chrono_literals;

pool::KeyHealth health(Shim& shim, std::size_t index) {
  return shim.server().state()->pools.at(0).keys->health(index);
}

std::vector<std::string> keys_seen(const WsUpstream& upstream) {
  std::vector<std::string> keys;
  for (const SeenRequest& r : upstream.handshakes()) {
    keys.push_back(r.header("Authorization"));
  }
  return keys;
}

std::string bearer(int key) {
  return "Bearer " + test_key(key);
}

TEST(WebSocket, ARateLimitedHandshakeFailsOverAndTheNextKeyOpensTheSocket) {
  WsUpstream upstream;
  upstream.refuse_next(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  Shim shim(pool_toml(2), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_EQ(client.status(), 101);
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{bearer(0), bearer(1)}));
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::cooling);
  EXPECT_EQ(health(shim, 1).websockets, 1);
  client.send({true, "ping?"});
  auto echo = client.read();
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->data, "ping?");
}

TEST(WebSocket, AnUnauthorizedHandshakeDisablesTheKeyAndAServerErrorMovesOn) {
  WsUpstream upstream;
  upstream.refuse_next(json(401, R"({"error":{"message":"bad key"}})"));
  upstream.refuse_next(json(503, R"({"error":{"message":"overloaded"}})"));
  Shim shim(pool_toml(3), upstream.base_url());
  WsClient client(shim.port(), "/v1/realtime?model=gpt-realtime");
  ASSERT_EQ(client.status(), 101);
  std::vector<std::string> keys = keys_seen(upstream);
  ASSERT_GE(keys.size(), 3U); // a 503 may be retried on its key once, as for any request
  EXPECT_EQ(keys[0], bearer(0));
  EXPECT_EQ(std::count(keys.begin(), keys.end(), bearer(0)), 1);
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::disabled);
  EXPECT_EQ(upstream.handshakes().back().target, "/v1/realtime?model=gpt-realtime");
}

TEST(WebSocket, WhenEveryKeyRefusesTheClientGetsTheLastRefusalAsAnHttpAnswer) {
  WsUpstream upstream;
  upstream.refuse_next(json(429, R"({"error":{"message":"first"}})", {{"Retry-After", "30"}}));
  upstream.refuse_next(json(429, R"({"error":{"message":"second"}})", {{"Retry-After", "30"}}));
  Shim shim(pool_toml(2), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  auto res = client.Get("/v1/responses", {{"Connection", "Upgrade"},
                                          {"Upgrade", "websocket"},
                                          {"Sec-WebSocket-Version", "13"},
                                          {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_NE(res->body.find("second"), std::string::npos);
  EXPECT_EQ(res->get_header_value("Retry-After"), "30");
  EXPECT_EQ(health(shim, 1).websockets, 0);
}

TEST(WebSocket, ThePlaceholderNeverReachesTheUpstreamNorInASubprotocol) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/realtime",
                  {{"Sec-WebSocket-Protocol", "realtime, openai-insecure-api-key.keyshim"}});
  // The upstream (Beast) picks no subprotocol, which a client may accept or not: only the handshake matters
  // here.
  ASSERT_FALSE(upstream.handshakes().empty());
  const SeenRequest seen = upstream.handshakes().front();
  EXPECT_EQ(seen.header("Authorization"), bearer(0));
  EXPECT_EQ(seen.header("Sec-WebSocket-Protocol"), "realtime");
  for (const auto& [name, value] : seen.headers) {
    EXPECT_EQ(value.find("keyshim"), std::string::npos) << name;
  }
}

TEST(WebSocket, TextBinaryFragmentedAndLargeMessagesCrossBothWaysUnchanged) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  std::string binary(200 * 1024, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) {
    binary[i] = static_cast<char>((i * 7919) & 0xff);
  }
  std::vector<WsMessage> sent = {
      {true, "h\xc3\xa9llo \xe2\x9c\x93"}, {false, binary}, {false, std::string(16 * 1024 * 1024, 'z')}};
  for (const WsMessage& message : sent) {
    client.send(message);
    auto echo = client.read();
    ASSERT_TRUE(echo) << client.close_reason();
    EXPECT_EQ(echo->text, message.text);
    EXPECT_EQ(echo->data.size(), message.data.size());
    EXPECT_TRUE(echo->data == message.data);
  }
  // In fragments of 64 KiB: one message on the far side.
  client.socket().binary(true);
  for (std::size_t at = 0; at < binary.size(); at += 64 * 1024) {
    bool last = at + 64 * 1024 >= binary.size();
    client.socket().write_some(
        last, boost::asio::buffer(binary.data() + at, std::min<std::size_t>(64 * 1024, binary.size() - at)));
  }
  auto echo = client.read();
  ASSERT_TRUE(echo);
  EXPECT_TRUE(echo->data == binary);
  std::vector<WsMessage> received = upstream.received();
  ASSERT_EQ(received.size(), 4U);
  EXPECT_EQ(received[0].data, sent[0].data);
  EXPECT_TRUE(received[0].text);
  EXPECT_TRUE(received[3].data == binary);
}

TEST(WebSocket, AnHttpsUpstreamIsAWssWebSocketVerifiedLikeAnyRequest) {
  if (!localhost_resolves_to_ipv4_loopback()) {
    GTEST_SKIP() << "localhost does not resolve to 127.0.0.1 here";
  }
  TempDir dir;
  TestPki pki = make_test_pki(dir);
  WsUpstream upstream(pki);
  upstream.refuse_next(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  upstream.behave(WsBehaviour::greet_then_echo);
  Shim shim(pool_toml(2, "ca_file = '" + pki.ca_pem + "'\n"), upstream.base_url());
  WsClient client(shim.port(), "/v1/realtime");
  ASSERT_TRUE(client.open()) << client.status() << " " << client.error();
  auto greeting = client.read();
  ASSERT_TRUE(greeting);
  EXPECT_EQ(greeting->data, "hello");
  std::string big(300 * 1024, 'q');
  client.send({false, big});
  auto echo = client.read();
  ASSERT_TRUE(echo);
  EXPECT_TRUE(echo->data == big);
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{bearer(0), bearer(1)}));
  client.socket().close(ws::close_reason(ws::close_code::normal));
  EXPECT_EQ(upstream.wait_for_end(), 1000);
}

TEST(WebSocket, TheUpstreamsFirstMessageSentWithThe101Arrives) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::greet_then_echo);
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1beta/models/gemini:BidiGenerateContent");
  ASSERT_TRUE(client.open());
  auto greeting = client.read();
  ASSERT_TRUE(greeting);
  EXPECT_EQ(greeting->data, "hello");
}

TEST(WebSocket, APingIsAnsweredByTheUpstreamsPong) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.socket().ping("p-1");
  client.send({true, "after the ping"});
  auto echo = client.read(); // pongs arrive through the control callback while reading
  ASSERT_TRUE(echo);
  EXPECT_EQ(client.pongs(), (std::vector<std::string>{"p-1"}));
}

TEST(WebSocket, CloseCodesAndReasonsCrossBothWays) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::close_after_first);
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.send({true, "bye?"});
  EXPECT_FALSE(client.read());
  EXPECT_EQ(client.close_code(), 4000);
  EXPECT_EQ(client.close_reason(), "bye");
  EXPECT_EQ(upstream.wait_for_end(), 4000); // Beast answers a close with the same code
}

TEST(WebSocket, TheClientsCloseCodeReachesTheUpstream) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.socket().close(ws::close_reason(static_cast<ws::close_code>(4001), "done"));
  EXPECT_EQ(upstream.wait_for_end(), 4001);
}

TEST(WebSocket, AnUpstreamHangUpClosesTheClientWith1011) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::hang_up_after_first);
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.send({true, "x"});
  EXPECT_FALSE(client.read());
  EXPECT_EQ(client.close_code(), 1011);
}

TEST(WebSocket, AClientHangUpClosesTheUpstreamWith1001AndTheCountDrops) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  {
    WsClient client(shim.port(), "/v1/responses");
    ASSERT_TRUE(client.open());
    client.send({true, "x"});
    ASSERT_TRUE(client.read());
    EXPECT_EQ(health(shim, 0).websockets, 1);
    boost::system::error_code ec;
    client.socket().next_layer().close(ec); // no close frame
  }
  EXPECT_EQ(upstream.wait_for_end(), 1001);
}

TEST(WebSocket, SilenceInBothDirectionsForIdleTimeoutClosesBothWith1001) {
  WsUpstream upstream;
  Shim shim(pool_toml(1, "idle_timeout = \"300ms\"\n"), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  EXPECT_FALSE(client.read()); // nothing is sent: keyshim ends it
  EXPECT_EQ(client.close_code(), 1001);
  EXPECT_NE(client.close_reason().find("idle"), std::string::npos);
  EXPECT_EQ(upstream.wait_for_end(), 1001);
}

TEST(WebSocket, ShutdownClosesAnOpenWebSocketWith1001) {
  WsUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  shim.server().begin_shutdown();
  shim.server().abort_in_flight(); // what the drain timeout does
  EXPECT_FALSE(client.read());
  EXPECT_EQ(client.close_code(), 1001);
  EXPECT_EQ(client.close_reason(), "keyshim is shutting down");
  EXPECT_EQ(upstream.wait_for_end(), 1001);
}

const char* const k_limited =
    R"({"type":"error","status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"},"headers":{"retry-after":"30"}})";

std::vector<std::string> answered_turn() {
  return {
      R"({"type":"response.created","response":{"id":"r2"}})",
      R"({"type":"response.output_text.delta","delta":"pong"})",
      R"({"type":"response.completed","response":{"id":"r2","usage":{"input_tokens":10,"output_tokens":2}}})"};
}

TEST(ResponsesWebSocket, ARateLimitedFirstEventMovesTheTurnToTheNextKeyUnseen) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::respond);
  upstream.respond_next_connection_with({k_limited});
  upstream.respond_with(answered_turn());
  Shim shim(pool_toml(2), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  const std::string turn =
      R"({"type":"response.create","model":"gpt-5","input":[{"role":"user","content":"ping"}]})";
  client.send({true, turn});
  for (const std::string& expected : answered_turn()) {
    auto event = client.read();
    ASSERT_TRUE(event) << client.close_reason();
    EXPECT_EQ(event->data, expected);
  }
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{bearer(0), bearer(1)}));
  std::vector<WsMessage> received = upstream.received();
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[0].data, turn);
  EXPECT_EQ(received[1].data, turn);
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::cooling);
  EXPECT_EQ(health(shim, 0).websockets, 0);
  EXPECT_EQ(health(shim, 1).websockets, 1);
  EXPECT_EQ(health(shim, 1).total.output_tokens, 2U);
  // The socket goes on with the new key.
  client.send({true, R"({"type":"response.create","previous_response_id":"r2","input":[]})"});
  auto next = client.read();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->data, answered_turn().front());
  EXPECT_EQ(upstream.handshakes().size(), 2U);
}

TEST(ResponsesWebSocket, AnErrorAfterTheTurnsFirstEventIsRelayedAsItIs) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::respond);
  const std::string created = R"({"type":"response.created","response":{"id":"r1"}})";
  upstream.respond_with({created, k_limited});
  Shim shim(pool_toml(2), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.send({true, R"({"type":"response.create","input":[]})"});
  auto first = client.read();
  auto second = client.read();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->data, created);
  EXPECT_EQ(second->data, k_limited);
  EXPECT_EQ(upstream.handshakes().size(), 1U); // never re-sent once the client had an event
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::cooling);
}

TEST(ResponsesWebSocket, WithNoOtherKeyTheHeldEventReachesTheClientAndTheSocketCloses) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::respond);
  upstream.respond_with({k_limited});
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses");
  ASSERT_TRUE(client.open());
  client.send({true, R"({"type":"response.create","input":[]})"});
  auto event = client.read();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->data, k_limited);
  EXPECT_FALSE(client.read());
  EXPECT_EQ(client.close_code(), 1011);
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::cooling);
}

TEST(ResponsesWebSocket, ATurnNamingAnEarlierResponseIsNotMovedItsErrorIsRelayedAndCoolsTheKey) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::respond);
  const std::string limited =
      R"({"type":"error","status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"},"headers":{"retry-after":"30"}})";
  upstream.respond_with({limited});
  Shim shim(pool_toml(2), upstream.base_url());
  {
    WsClient client(shim.port(), "/v1/responses");
    ASSERT_TRUE(client.open());
    client.send({true, R"({"type":"response.create","previous_response_id":"r1","input":[]})"});
    auto event = client.read();
    ASSERT_TRUE(event);
    EXPECT_EQ(event->data, limited); // relayed unchanged: the client decides to reconnect
  }
  EXPECT_EQ(health(shim, 0).state, pool::KeyState::cooling);
  WsClient again(shim.port(), "/v1/responses");
  ASSERT_TRUE(again.open());
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{bearer(0), bearer(1)}));
}

TEST(ResponsesWebSocket, TokensOfEachCompletedResponseCountForTheKey) {
  WsUpstream upstream;
  upstream.behave(WsBehaviour::respond);
  upstream.respond_with(
      {R"({"type":"response.created","response":{"id":"r1"}})",
       R"({"type":"response.output_text.delta","delta":"pong"})",
       R"({"type":"response.completed","response":{"id":"r1","usage":{"input_tokens":100,"output_tokens":7}}})"});
  Shim shim(pool_toml(1), upstream.base_url());
  WsClient client(shim.port(), "/v1/responses", {{"Sec-WebSocket-Extensions", "permessage-deflate"}});
  ASSERT_TRUE(client.open());
  for (int turn = 0; turn < 2; ++turn) {
    client.send({true, R"({"type":"response.create"})"});
    for (int event = 0; event < 3; ++event) {
      ASSERT_TRUE(client.read());
    }
  }
  EXPECT_FALSE(upstream.handshakes().front().has_header("Sec-WebSocket-Extensions"));
  pool::KeyHealth h = health(shim, 0);
  EXPECT_EQ(h.total.input_tokens, 200U);
  EXPECT_EQ(h.total.output_tokens, 14U);
  EXPECT_EQ(h.state, pool::KeyState::available);
}

} // namespace
} // namespace keyshim::test
