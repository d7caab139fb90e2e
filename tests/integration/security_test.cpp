// Who may use the port that holds the keys, and what malformed input gets.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "util/secret.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

namespace keyshim::test {
namespace {

RawResponse round_trip(const Shim& shim, const std::string& request) {
  RawConnection conn(shim.port());
  conn.send(request);
  conn.read_response(10s);
  return parse_response(conn.received());
}

std::string get_with_host(const std::string& host, const std::string& extra = "") {
  return "GET /v1/models HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n" + extra + "\r\n";
}

TEST(Security, NonLoopbackHostIsRefused) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  for (const char* host : {"evil.example.com", "evil.example.com:8787", "127.0.0.1.nip.io", "10.0.0.1",
                           "localhost.evil.com", "[::ffff:127.0.0.1]"}) {
    RawResponse res = round_trip(shim, get_with_host(host));
    EXPECT_EQ(res.status, 403) << host;
  }
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST(Security, LoopbackHostsAreAccepted) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  for (const char* host :
       {"127.0.0.1", "127.0.0.1:8787", "localhost", "LOCALHOST:1", "[::1]:8787", "127.5.6.7"}) {
    EXPECT_EQ(round_trip(shim, get_with_host(host)).status, 200) << host;
  }
}

TEST(Security, BrowserOriginsAreRefusedUnlessAllowed) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "", "allowed_origins = [\"http://localhost:3000\"]\n"), upstream.base_url());
  RawResponse refused = round_trip(shim, get_with_host("127.0.0.1", "Origin: https://evil.example\r\n"));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.header("Access-Control-Allow-Origin"), "");
  RawResponse allowed = round_trip(shim, get_with_host("127.0.0.1", "Origin: http://localhost:3000\r\n"));
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.header("Access-Control-Allow-Origin"), "") << "keyshim never sends CORS headers";
  EXPECT_EQ(upstream.request_count(), 1u);
}

TEST(Security, ClientTokenIsRequiredAndNeverForwarded) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "", "client_token = \"shim-token-123\"\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  auto missing = client.Get("/v1/models");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  auto wrong = client.Get("/v1/models", {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer shim-token-123"}})->status, 200);
  EXPECT_EQ(client.Get("/v1/models", {{"x-api-key", "shim-token-123"}})->status, 200);
  ASSERT_EQ(upstream.request_count(), 2u);
  for (const SeenRequest& r : upstream.seen()) {
    EXPECT_EQ(r.header("Authorization"), "Bearer " + test_key(0));
    EXPECT_FALSE(r.has_header("x-api-key"));
  }
  EXPECT_EQ(client.Get("/health")->status, 200) << "/health never needs the token";
  EXPECT_EQ(client.Get("/status")->status, 401);
  EXPECT_EQ(client.Get("/status", {{"Authorization", "Bearer shim-token-123"}})->status, 200);
}

// Providers echo what they were sent: a debug header, a redirect with the
// query key. Streamed answers, relayed errors and answers that end a key's
// turn take different paths to the client; none may carry the key.
TEST(Security, APoolKeyEchoedInResponseHeadersNeverReachesTheClient) {
  const std::string key = test_key(0);
  for (int status : {200, 302, 400, 401, 429}) {
    FakeUpstream upstream;
    Scripted s;
    s.status = status;
    s.headers = {
        {"Content-Type", "application/json"}, {"X-Echo-Key", key}, {"Location", "/cb?key=" + key + "&x=1"}};
    s.pieces = {"{}"};
    upstream.push(s);
    Shim shim(pool_toml(1), upstream.base_url());
    RawResponse res = round_trip(shim, make_request("POST", "/v1/chat/completions", "{}"));
    ASSERT_EQ(res.status, status) << res.head;
    EXPECT_EQ(res.head.find(key), std::string::npos) << status << ": " << res.head;
    EXPECT_NE(res.head.find("X-Echo-Key: " + util::fingerprint_of(key)), std::string::npos)
        << status << ": the echoed field is kept, with the fingerprint in place of the key\n"
        << res.head;
  }
}

TEST(Security, HealthAndStatusDescribeKeysWithoutKeyMaterial) {
  FakeUpstream upstream;
  upstream.push({401, {{"Content-Type", "application/json"}}, {"{}"}, false});
  Shim shim(pool_toml(2), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  ASSERT_EQ(client.Post("/v1/chat/completions", "{}", "application/json")->status, 200);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"ok","keys":{"total":2,"available":1,"cooling":0,"disabled":1},)"
                          R"("pools":[{"name":"default","route":"/","status":"ok",)"
                          R"("keys":{"total":2,"available":1,"cooling":0,"disabled":1}}]})");
  auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find("\"label\":\"k0\""), std::string::npos);
  EXPECT_NE(status->body.find("\"state\":\"disabled\""), std::string::npos);
  EXPECT_NE(status->body.find(util::fingerprint_of(test_key(0))), std::string::npos);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(status->body.find(test_key(i)), std::string::npos);
  }
}

TEST(Security, HealthIs503WhenNoKeyIsAvailable) {
  FakeUpstream upstream;
  upstream.push({401, {{"Content-Type", "application/json"}}, {"{}"}, false});
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.Post("/v1/chat/completions", "{}", "application/json");
  auto health = client.Get("/health");
  EXPECT_EQ(health->status, 503);
  EXPECT_NE(health->body.find("\"status\":\"unavailable\""), std::string::npos);
}

TEST(Security, OversizedHeaderBlockGets431) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  std::string many;
  for (int i = 0; i < 100; ++i) {
    many += "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'f') + "\r\n";
  }
  EXPECT_EQ(round_trip(shim, get_with_host("127.0.0.1", many)).status, 431);
  EXPECT_EQ(round_trip(shim, get_with_host("127.0.0.1", "X-Long: " + std::string(9000, 'l') + "\r\n")).status,
            431);
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST(Security, OversizedBodyGets413WithoutReadingIt) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "", "max_request_body = \"1KiB\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000\r\n\r\n");
  ASSERT_TRUE(conn.read_to_close(10s));
  EXPECT_EQ(parse_response(conn.received()).status, 413);
  // A chunked body has no declared length: httplib counts it as it reads.
  std::string chunked =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "800\r\n" +
      std::string(2048, 'b') + "\r\n0\r\n\r\n";
  EXPECT_EQ(round_trip(shim, chunked).status, 413);
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST(Security, AmbiguousFramingIsRefused) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  EXPECT_EQ(round_trip(shim, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nTransfer-Encoding: "
                             "chunked\r\n\r\n0\r\n\r\n")
                .status,
            400);
  EXPECT_EQ(
      round_trip(shim,
                 "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
          .status,
      400);
  EXPECT_EQ(round_trip(shim, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n").status,
            400);
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST(Security, MalformedRequestsGetAClearErrorAndTheServerStaysUp) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  RawResponse garbage = round_trip(shim, "THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(garbage.status, 400);
  EXPECT_EQ(
      round_trip(shim, "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").status,
      414);
  EXPECT_EQ(round_trip(shim, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n folded\r\n\r\n").status, 400);
  httplib::Client client("127.0.0.1", shim.port());
  EXPECT_EQ(client.Get("/v1/models")->status, 200);
}

// A field value is relayed byte for byte: "%0D%0A" in it is text, never
// decoded into a line break that would add a field of the client's choosing
// to the upstream request. (A raw CR or NUL in a value is refused before
// anything is forwarded: strict_requests_test.)
TEST(Security, PercentEncodedCrLfInAHeaderValueIsForwardedAsTextNotDecoded) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  RawResponse res = round_trip(shim, get_with_host("127.0.0.1", "X-Inject: a%0D%0AX-Evil: 1\r\n"));
  EXPECT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen()[0];
  std::vector<std::pair<std::string, std::string>> naming_evil;
  for (const auto& field : seen.headers) {
    if ((field.first + ": " + field.second).find("Evil") != std::string::npos) {
      naming_evil.push_back(field);
    }
  }
  using Field = std::pair<std::string, std::string>;
  EXPECT_EQ(naming_evil, (std::vector<Field>{{"X-Inject", "a%0D%0AX-Evil: 1"}}))
      << "the one field, as sent, and no X-Evil field";
}

TEST(Security, ExpectContinueIsAnswered) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(conn.read_until("100 Continue"));
  conn.send("{}");
  ASSERT_TRUE(conn.read_to_close(10s));
  std::string after = conn.received().substr(conn.received().find("\r\n\r\n") + 4);
  EXPECT_EQ(parse_response(after).status, 200);
  EXPECT_EQ(upstream.seen().at(0).body, "{}");
}

TEST(Security, ServesOnIpv6Loopback) {
  FakeUpstream upstream;
  TempDir dir;
  std::string path = dir.write("keys.toml", "[upstream]\nbase_url = \"" + upstream.base_url() +
                                                "\"\n[[keys]]\nkey = \"" + test_key(0) + "\"\n");
  server::ServeOptions options;
  options.config_path = path;
  options.listen = config::ListenAddress{"::1", 0};
  server::ShimServer shim(options);
  shim.load();
  std::string error;
  ASSERT_TRUE(shim.bind(error)) << error;
  std::thread serving([&] { shim.serve(); });
  {
    RawConnection conn(shim.port(), "::1");
    conn.send("GET /v1/models HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n");
    conn.read_to_close(10s);
    EXPECT_EQ(parse_response(conn.received()).status, 200);
  }
  shim.begin_shutdown();
  serving.join();
}

TEST(Security, NonLoopbackListenAddressIsRefused) {
  server::ServeOptions options;
  options.config_path = "/nonexistent/keys.toml";
  options.listen = config::ListenAddress{"0.0.0.0", 0};
  server::ShimServer shim(options);
  shim.load();
  std::string error;
  EXPECT_FALSE(shim.bind(error));
  EXPECT_NE(error.find("loopback"), std::string::npos) << error;
}

} // namespace
} // namespace keyshim::test
