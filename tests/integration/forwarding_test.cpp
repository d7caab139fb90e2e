// What crosses the relay unchanged, and what never does.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <httplib.h>

namespace keyshim::test {
namespace {

httplib::Client client_for(const Shim& shim) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_decompress(false);
  client.set_read_timeout(10, 0);
  return client;
}

TEST(Forwarding, MethodPathQueryAndBodyArriveUnchangedWithThePoolKey) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  auto client = client_for(shim);
  std::string body(100 * 1024, 'x');
  auto res =
      client.Post("/v1/models/gemini:streamGenerateContent?alt=sse&beta=true", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"ok":true})");
  auto seen = upstream.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].target, "/v1/models/gemini:streamGenerateContent?alt=sse&beta=true");
  EXPECT_EQ(seen[0].body, body);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer " + test_key(0));
}

TEST(Forwarding, BaseUrlPathPrefixIsPrepended) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url() + "/openai/v1");
  auto client = client_for(shim);
  auto res = client.Get("/chat/completions?x=1");
  ASSERT_TRUE(res);
  ASSERT_EQ(upstream.request_count(), 1u);
  EXPECT_EQ(upstream.seen()[0].target, "/openai/v1/chat/completions?x=1");
}

TEST(Forwarding, ClientCredentialsAreReplacedAndHopByHopHeadersDropped) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  auto client = client_for(shim);
  httplib::Headers headers = {{"Authorization", "Bearer placeholder"},
                              {"x-api-key", "placeholder"},
                              {"Connection", "X-Drop-Me"},
                              {"X-Drop-Me", "1"},
                              {"Proxy-Authorization", "Basic abc"},
                              {"anthropic-beta", std::string(2000, 'b')},
                              {"X-Json", R"({"a":[1,2,{"b":"c"}]})"}};
  auto res = client.Get("/v1/models", headers);
  ASSERT_TRUE(res);
  auto seen = upstream.seen().at(0);
  EXPECT_EQ(seen.header("Authorization"), "Bearer " + test_key(0));
  EXPECT_FALSE(seen.has_header("x-api-key"));
  EXPECT_FALSE(seen.has_header("X-Drop-Me"));
  EXPECT_FALSE(seen.has_header("Proxy-Authorization"));
  EXPECT_FALSE(seen.has_header("REMOTE_ADDR"));
  EXPECT_EQ(seen.header("anthropic-beta"), std::string(2000, 'b'));
  EXPECT_EQ(seen.header("X-Json"), R"({"a":[1,2,{"b":"c"}]})");
  EXPECT_EQ(seen.header("Host"), "127.0.0.1:" + std::to_string(upstream.port()));
}

struct AuthCase {
  const char* auth;
  const char* header;
  const char* prefix;
  const char* target_upstream; // the client's ?key= is a credential whatever the style: never forwarded
};

class AuthStyles : public ::testing::TestWithParam<AuthCase> {};

TEST_P(AuthStyles, PoolKeyIsPlacedWhereTheStyleSays) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, fmt::format("auth = \"{}\"\n", GetParam().auth)), upstream.base_url());
  auto client = client_for(shim);
  ASSERT_TRUE(client.Get("/v1/x?key=placeholder", {{"x-goog-api-key", "placeholder"}}));
  auto seen = upstream.seen().at(0);
  EXPECT_EQ(seen.header(GetParam().header), std::string(GetParam().prefix) + test_key(0));
  EXPECT_EQ(seen.target, GetParam().target_upstream);
}

INSTANTIATE_TEST_SUITE_P(Relay, AuthStyles,
                         ::testing::Values(AuthCase{"bearer", "Authorization", "Bearer ", "/v1/x"},
                                           AuthCase{"x-api-key", "x-api-key", "", "/v1/x"},
                                           AuthCase{"x-goog-api-key", "x-goog-api-key", "", "/v1/x"},
                                           AuthCase{"api-key", "api-key", "", "/v1/x"}),
                         [](const ::testing::TestParamInfo<AuthCase>& param_info) {
                           std::string name = param_info.param.auth;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Forwarding, QueryAuthReplacesTheClientsParameter) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "auth = \"query:key\"\n"), upstream.base_url());
  auto client = client_for(shim);
  ASSERT_TRUE(client.Get("/v1beta/models?key=placeholder&alt=sse"));
  auto seen = upstream.seen().at(0);
  EXPECT_EQ(seen.target, "/v1beta/models?alt=sse&key=" + test_key(0));
  EXPECT_FALSE(seen.has_header("Authorization"));
}

TEST(Forwarding, CompressedBodiesPassThroughUntouched) {
  FakeUpstream upstream;
  std::string gzip_bytes("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56\xca\xcf\x56\xb2\x2a\x29\x2a\x4d"
                         "\xad\x05\x00\x4f\x7d\x5e\x4b\x0b\x00\x00\x00",
                         31);
  upstream.push(
      {200, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}}, {gzip_bytes}, false});
  Shim shim(pool_toml(1), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(make_request("GET", "/v1/models", "", "Accept-Encoding: gzip, br, zstd\r\n"));
  ASSERT_TRUE(conn.read_until(std::string("\x4b\x0b\x00\x00\x00", 5)));
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.header("Content-Encoding"), "gzip");
  EXPECT_EQ(res.body, gzip_bytes);
  EXPECT_EQ(upstream.seen().at(0).header("Accept-Encoding"), "gzip, br, zstd");
}

TEST(Forwarding, ResponseStatusHeadersAndBodyReachTheClient) {
  FakeUpstream upstream;
  upstream.push(
      {201, {{"Content-Type", "application/json"}, {"x-request-id", "req_123"}}, {R"({"id":1})"}, false});
  Shim shim(pool_toml(1), upstream.base_url());
  auto client = client_for(shim);
  auto res = client.Post("/v1/files", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201);
  EXPECT_EQ(res->get_header_value("x-request-id"), "req_123");
  EXPECT_EQ(res->body, R"({"id":1})");
}

TEST(Forwarding, SeveralRequestsShareOneKeepAliveConnection) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto res = client.Get("/v1/models");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_EQ(upstream.request_count(), 5u);
  // Upstream connections are reused too: far fewer than one per request.
  EXPECT_LT(upstream.connections(), 5u);
}

TEST(Forwarding, HeadKeepsTheDeclaredLengthAndSendsNoBody) {
  FakeUpstream upstream;
  upstream.push({200, {{"Content-Type", "application/json"}}, {std::string(1234, 'x')}, false});
  Shim shim(pool_toml(1), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send("HEAD /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(conn.read_to_close(10s));
  EXPECT_EQ(upstream.seen().at(0).method, "HEAD");
  std::string received = conn.received();
  EXPECT_EQ(received.rfind("HTTP/1.1 200", 0), 0u) << received;
  EXPECT_NE(received.find("Content-Length: 1234\r\n"), std::string::npos) << received;
  EXPECT_EQ(received.substr(received.find("\r\n\r\n") + 4), "") << "a HEAD answer has no body";
}

// After the client's Connection: close the answer arrives whole and the
// connection ends, whether or not the client sent more after its request
// (pipelined here); nothing after it is served.
TEST(Forwarding, AnswerToConnectionCloseArrivesWholeWithOrWithoutBytesAfterIt) {
  for (const std::string after : {"", "GET /v1/more HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"}) {
    FakeUpstream upstream;
    upstream.push({200, {{"Content-Type", "application/json"}}, {std::string(200000, 'x')}, false});
    Shim shim(pool_toml(1), upstream.base_url());
    RawConnection conn(shim.port());
    conn.send("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" + after);
    ASSERT_TRUE(conn.read_to_close(10s)) << "after: " << after;
    RawResponse response = parse_response(conn.received());
    EXPECT_EQ(response.status, 200);
    EXPECT_TRUE(response.complete) << "after: " << after;
    EXPECT_EQ(response.body.size(), 200000u);
    EXPECT_EQ(upstream.request_count(), 1u) << "a request after Connection: close was served";
  }
}

TEST(Forwarding, HeadProbeOfTheRootIsAnsweredLocally) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  auto client = client_for(shim);
  auto res = client.Head("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST(Forwarding, ClientErrorsAreRelayedAsIsWithoutTouchingTheKey) {
  FakeUpstream upstream;
  upstream.push({400,
                 {{"Content-Type", "application/json"}},
                 {R"({"error":{"message":"max_tokens too large","type":"invalid_request_error"}})"},
                 false});
  Shim shim(pool_toml(2), upstream.base_url());
  auto client = client_for(shim);
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("max_tokens too large"), std::string::npos);
  EXPECT_EQ(upstream.request_count(), 1u);
  EXPECT_EQ(shim.server().state()->pools.at(0).keys->health(0).state, pool::KeyState::available);
}

TEST(Forwarding, KeysNeverAppearInLogs) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push({401,
                 {{"Content-Type", "application/json"}},
                 {R"({"error":{"message":"Incorrect API key provided: )" + test_key(0) + R"("}})"},
                 false});
  Shim shim(pool_toml(2), upstream.base_url());
  auto client = client_for(shim);
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_TRUE(logs.wait_for("chain=k0:401,k1:200")) << logs.text();
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(logs.contains(test_key(i))) << logs.text();
    EXPECT_FALSE(logs.contains(test_key(i).substr(5))) << "a key fragment leaked";
  }
}

} // namespace
} // namespace keyshim::test
