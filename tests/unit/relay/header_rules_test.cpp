#include "relay/header_rules.hpp"
#include "relay/redact.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {
namespace {

// A request head as Beast parses it from the wire, so field name case and
// order are exactly those of `text`.
RequestHead parse_request(std::string_view text) {
  http::request_parser<http::empty_body, HeadAllocator> parser;
  ErrorCode ec;
  parser.put(asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_header_done());
  return parser.release();
}

ResponseHead parse_response(std::string_view text) {
  http::response_parser<http::empty_body, HeadAllocator> parser;
  ErrorCode ec;
  parser.put(asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_header_done());
  return parser.release();
}

config::UpstreamUrl url(std::string scheme, std::string host, int port, std::string prefix = "") {
  return config::UpstreamUrl{std::move(scheme), std::move(host), port, std::move(prefix)};
}

config::KeyConfig pool_key(std::string secret, config::Auth auth = {config::AuthStyle::bearer, ""},
                           config::UpstreamUrl base = url("https", "api.openai.com", 443)) {
  config::KeyConfig key;
  key.label = "k0";
  key.secret = util::Secret(std::move(secret));
  key.base_url = std::move(base);
  key.auth = std::move(auth);
  return key;
}

std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The raw key and a key with characters that percent-encoding changes, in a
// pool, with the Redactor client_head uses.
struct EchoPool {
  EchoPool() : pool(keys(), config::Strategy::ordered, clock), redact(pool) {}

  static std::vector<config::KeyConfig> keys() {
    return {pool_key("sk-pool-raw-0001"), pool_key("sk/+=pool-0002")};
  }
  const util::Secret& raw() const { return pool.key(0).secret; }
  const util::Secret& slashy() const { return pool.key(1).secret; }

  test::FakeClock clock;
  pool::KeyPool pool;
  Redactor redact;
};

// --- field classification -------------------------------------------------

TEST(FieldLookup, FindsWhatBeastsLookupFindsWhateverTheCaseTheClientSent) {
  RequestHead head =
      parse_request("POST /v1 HTTP/1.1\r\nhOsT: a\r\nX-One: 1\r\ncontent-TYPE: text/plain\r\n"
                    "Connection: keep-alive\r\nconnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  for (http::field name : {http::field::host, http::field::content_type, http::field::connection,
                           http::field::origin, http::field::expect}) {
    EXPECT_EQ(field_value(head, name), head[name]) << name;
    EXPECT_EQ(field_count(head, name), head.count(name)) << name;
    EXPECT_EQ(has_field(head, name), head.find(name) != head.end()) << name;
    EXPECT_EQ(first_field(head, name) != nullptr, head.find(name) != head.end()) << name;
  }
  EXPECT_EQ(field_value(head, http::field::connection), "keep-alive"); // the first, as sent
  EXPECT_EQ(field_count(head, http::field::connection), 2u);
  std::vector<std::string_view> seen;
  for_each_field(head, http::field::connection, [&](std::string_view value) { seen.push_back(value); });
  EXPECT_EQ(seen, (std::vector<std::string_view>{"keep-alive", "Upgrade"}));
}

TEST(HeaderRules, HopByHopNamesAreRecognisedInAnyCase) {
  for (const char* name : {"Connection", "keep-alive", "PROXY-CONNECTION", "TE", "Trailer",
                           "Transfer-Encoding", "upgrade", "Proxy-Authorization", "proxy-authenticate"}) {
    EXPECT_TRUE(is_hop_by_hop(name)) << name;
  }
  for (const char* name : {"Content-Length", "Content-Type", "Authorization", "Host", "Trailers", "X-TE"}) {
    EXPECT_FALSE(is_hop_by_hop(name)) << name;
  }
}

TEST(HeaderRules, CredentialNamesAreRecognisedInAnyCase) {
  for (const char* name :
       {"Authorization", "authorization", "x-api-key", "X-Api-Key", "X-Goog-Api-Key", "api-key", "API-KEY"}) {
    EXPECT_TRUE(is_credential(name)) << name;
  }
  for (const char* name : {"Proxy-Authorization", "x-api-key-id", "key", "anthropic-version"}) {
    EXPECT_FALSE(is_credential(name)) << name;
  }
}

// --- upstream_head ----------------------------------------------------------

TEST(HeaderRules, SessionHeadersOfClaudeCodeAndCodexAreFoundInAnyCase) {
  EXPECT_EQ(session_header(parse_request("POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                                         "X-Claude-Code-Session-Id: 6b1e-claude\r\n\r\n")),
            "6b1e-claude");
  EXPECT_EQ(session_header(parse_request("GET /v1/responses HTTP/1.1\r\nHost: x\r\n"
                                         "session-id: 0199-codex\r\nthread-id: t\r\n\r\n")),
            "0199-codex");
  EXPECT_EQ(session_header(parse_request("POST /v1/responses HTTP/1.1\r\nHost: x\r\n"
                                         "Session_ID: 0198-older-codex\r\n\r\n")),
            "0198-older-codex");
  EXPECT_EQ(session_header(parse_request("POST /v1/chat HTTP/1.1\r\nHost: x\r\n"
                                         "x-session-ids: no\r\nsession: no\r\n\r\n")),
            "");
}

TEST(UpstreamHead, DropsHopByHopFieldsAndThoseNamedByConnection) {
  auto client = parse_request("POST /v1/chat/completions HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8787\r\n"
                              "Connection: keep-alive, X-Secret-Hop\r\n"
                              "X-Secret-Hop: 1\r\n"
                              "Keep-Alive: timeout=5\r\n"
                              "Proxy-Connection: keep-alive\r\n"
                              "TE: trailers\r\n"
                              "Trailer: X-Checksum\r\n"
                              "Upgrade: h2c\r\n"
                              "Proxy-Authorization: Basic YTpi\r\n"
                              "Accept: text/event-stream\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/chat/completions", pool_key("sk-pool"), std::nullopt),
            "POST /v1/chat/completions HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "Accept: text/event-stream\r\n"
            "Authorization: Bearer sk-pool\r\n"
            "\r\n");
}

// "close" and "keep-alive", all most clients list, name nothing more to
// drop; any other token in any Connection field still does.
TEST(UpstreamHead, AConnectionOfCloseOrKeepAliveDropsOnlyTheHopByHopFields) {
  auto plain = parse_request("POST /v1/messages HTTP/1.1\r\n"
                             "Host: 127.0.0.1:8787\r\n"
                             "Connection: Keep-Alive , close\r\n"
                             "Keep-Alive: timeout=5\r\n"
                             "X-Kept: 1\r\n"
                             "\r\n");
  EXPECT_EQ(upstream_head(plain, "/v1/messages", pool_key("sk-pool"), std::nullopt),
            "POST /v1/messages HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "X-Kept: 1\r\n"
            "Authorization: Bearer sk-pool\r\n"
            "\r\n");
  auto listed = parse_request("POST /v1/messages HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8787\r\n"
                              "Connection: close\r\n"
                              "X-Dropped: 1\r\n"
                              "Connection: ,X-Dropped\r\n"
                              "X-Kept: 1\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(listed, "/v1/messages", pool_key("sk-pool"), std::nullopt),
            "POST /v1/messages HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "X-Kept: 1\r\n"
            "Authorization: Bearer sk-pool\r\n"
            "\r\n");
}

// The rules ask Beast's field enum for the names it knows and compare the
// others by name: both must hold whatever the case the client wrote.
TEST(UpstreamHead, DropsWhatItDropsWhateverTheCaseOfTheName) {
  auto client = parse_request("POST /v1/messages HTTP/1.1\r\n"
                              "hOST: localhost:8787\r\n"
                              "CONNECTION: close\r\n"
                              "keep-ALIVE: timeout=5\r\n"
                              "PROXY-AUTHENTICATE: Basic\r\n"
                              "tE: trailers\r\n"
                              "AUTHORIZATION: Bearer placeholder\r\n"
                              "X-API-KEY: placeholder\r\n"
                              "Api-Key: placeholder\r\n"
                              "KEYSHIM-REPLAY: 7\r\n"
                              "Keyshim-Key: k0\r\n"
                              "eXPECT: 100-continue\r\n"
                              "ACCEPT: */*\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/messages", pool_key("sk-pool"), std::nullopt),
            "POST /v1/messages HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "ACCEPT: */*\r\n"
            "Authorization: Bearer sk-pool\r\n"
            "\r\n");
}

TEST(UpstreamHead, ReplacesClientCredentialsHostLengthAndExpectWithThePoolKey) {
  auto client = parse_request("POST /v1/messages HTTP/1.1\r\n"
                              "Host: localhost:8787\r\n"
                              "Authorization: Bearer placeholder\r\n"
                              "x-api-key: placeholder\r\n"
                              "X-Goog-Api-Key: placeholder\r\n"
                              "api-key: placeholder\r\n"
                              "Content-Length: 3\r\n"
                              "Expect: 100-continue\r\n"
                              "anthropic-version: 2023-06-01\r\n"
                              "\r\n");
  std::string head = upstream_head(
      client, "/v1/messages",
      pool_key("sk-ant-pool", {config::AuthStyle::x_api_key, ""}, url("https", "api.anthropic.com", 443)), 3);
  EXPECT_EQ(head, "POST /v1/messages HTTP/1.1\r\n"
                  "Host: api.anthropic.com\r\n"
                  "anthropic-version: 2023-06-01\r\n"
                  "x-api-key: sk-ant-pool\r\n"
                  "Content-Length: 3\r\n"
                  "\r\n");
  EXPECT_EQ(head.find("placeholder"), std::string::npos);
}

TEST(UpstreamHead, PlacesThePoolKeyAsEachHeaderAuthStyleSays) {
  struct Case {
    config::AuthStyle style;
    const char* line;
  };
  auto client = parse_request("GET /v1/models HTTP/1.1\r\n"
                              "Host: 127.0.0.1\r\n"
                              "authorization: Bearer placeholder\r\n"
                              "X-API-KEY: placeholder\r\n"
                              "x-goog-api-key: placeholder\r\n"
                              "Api-Key: placeholder\r\n"
                              "\r\n");
  for (const Case& c : {Case{config::AuthStyle::bearer, "Authorization: Bearer sk-k\r\n"},
                        Case{config::AuthStyle::x_api_key, "x-api-key: sk-k\r\n"},
                        Case{config::AuthStyle::x_goog_api_key, "x-goog-api-key: sk-k\r\n"},
                        Case{config::AuthStyle::api_key, "api-key: sk-k\r\n"}}) {
    std::string head = upstream_head(client, "/v1/models", pool_key("sk-k", {c.style, ""}), std::nullopt);
    EXPECT_EQ(head, std::string("GET /v1/models HTTP/1.1\r\nHost: api.openai.com\r\n") + c.line + "\r\n");
    EXPECT_EQ(count_of(head, "sk-k"), 1u) << head;
  }
}

TEST(UpstreamHead, QueryAuthPutsThePercentEncodedKeyInTheTargetAndNoCredentialHeader) {
  config::KeyConfig key = pool_key("sk/+=", {config::AuthStyle::query, "key"},
                                   url("https", "generativelanguage.googleapis.com", 443));
  std::string target = upstream_target("/v1beta/models?key=placeholder&alt=sse", {"key"}, key);
  EXPECT_EQ(target, "/v1beta/models?alt=sse&key=sk%2F%2B%3D");

  auto client = parse_request("POST /v1beta/models?key=placeholder&alt=sse HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8787\r\n"
                              "x-goog-api-key: placeholder\r\n"
                              "Authorization: Bearer placeholder\r\n"
                              "Content-Type: application/json\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(client, target, key, 2), "POST /v1beta/models?alt=sse&key=sk%2F%2B%3D HTTP/1.1\r\n"
                                                   "Host: generativelanguage.googleapis.com\r\n"
                                                   "Content-Type: application/json\r\n"
                                                   "Content-Length: 2\r\n"
                                                   "\r\n");
}

TEST(UpstreamHead, KeepsNameCaseValueBytesAndDuplicateOrderExactly) {
  auto client = parse_request("POST /v1/x HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8787\r\n"
                              "content-TYPE: application/json; charset=utf-8\r\n"
                              "x-lower: a\r\n"
                              "X-MiXeD-CaSe: b\r\n"
                              "X-Pct: %41%2F+%20\r\n"
                              "X-Utf8: h\xc3\xa9llo \xe2\x9c\x93\r\n"
                              "X-Dup: first\r\n"
                              "x-dup: second\r\n"
                              "X-Dup: third\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/x", pool_key("sk-k"), std::nullopt),
            "POST /v1/x HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "content-TYPE: application/json; charset=utf-8\r\n"
            "x-lower: a\r\n"
            "X-MiXeD-CaSe: b\r\n"
            "X-Pct: %41%2F+%20\r\n"
            "X-Utf8: h\xc3\xa9llo \xe2\x9c\x93\r\n"
            "X-Dup: first\r\n"
            "x-dup: second\r\n"
            "X-Dup: third\r\n"
            "Authorization: Bearer sk-k\r\n"
            "\r\n");
}

TEST(UpstreamHead, SeparatedDuplicatesKeepTheirRelativeOrder) {
  // Beast groups a duplicate after its earlier twin; what must hold is the
  // order among same-name fields.
  auto client = parse_request("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-B: b\r\nX-A: 2\r\nX-A: 3\r\n\r\n");
  std::string head = upstream_head(client, "/", pool_key("sk-k"), std::nullopt);
  std::size_t one = head.find("X-A: 1\r\n");
  std::size_t two = head.find("X-A: 2\r\n");
  std::size_t three = head.find("X-A: 3\r\n");
  ASSERT_NE(one, std::string::npos) << head;
  ASSERT_NE(two, std::string::npos) << head;
  ASSERT_NE(three, std::string::npos) << head;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
  EXPECT_EQ(count_of(head, "X-B: b\r\n"), 1u);
}

TEST(UpstreamHead, ContentLengthIsPresentExactlyWhenABodySizeIsGiven) {
  auto client = parse_request("POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 999\r\nX: y\r\n\r\n");
  config::KeyConfig key = pool_key("sk-k");

  std::string without = upstream_head(client, "/v1/x", key, std::nullopt);
  EXPECT_EQ(count_of(without, "Content-Length"), 0u) << without;

  std::string empty = upstream_head(client, "/v1/x", key, 0);
  EXPECT_EQ(count_of(empty, "Content-Length"), 1u) << empty;
  EXPECT_NE(empty.find("\r\nContent-Length: 0\r\n\r\n"), std::string::npos) << empty;

  std::string sized = upstream_head(client, "/v1/x", key, 12);
  EXPECT_EQ(count_of(sized, "Content-Length"), 1u) << sized;
  EXPECT_NE(sized.find("\r\nContent-Length: 12\r\n\r\n"), std::string::npos) << sized;
}

TEST(UpstreamHead, AChunkedClientBodyIsReframedWithContentLength) {
  auto client = parse_request("POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/x", pool_key("sk-k"), 5), "POST /v1/x HTTP/1.1\r\n"
                                                                 "Host: api.openai.com\r\n"
                                                                 "Authorization: Bearer sk-k\r\n"
                                                                 "Content-Length: 5\r\n"
                                                                 "\r\n");
}

TEST(UpstreamHead, AnHttp10ClientIsForwardedAsHttp11) {
  auto client = parse_request("GET /v1/models HTTP/1.0\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/models", pool_key("sk-k"), std::nullopt),
            "GET /v1/models HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "Accept: */*\r\n"
            "Authorization: Bearer sk-k\r\n"
            "\r\n");
}

TEST(UpstreamHead, HostIsTheUpstreamsWithTheDefaultPortOmitted) {
  struct Case {
    config::UpstreamUrl base;
    const char* host;
  };
  auto client = parse_request("GET / HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n\r\n");
  for (const Case& c : {Case{url("https", "api.openai.com", 443), "api.openai.com"},
                        Case{url("https", "api.example.com", 8443), "api.example.com:8443"},
                        Case{url("http", "127.0.0.1", 80), "127.0.0.1"},
                        Case{url("http", "127.0.0.1", 9000), "127.0.0.1:9000"},
                        Case{url("http", "localhost", 443), "localhost:443"},
                        Case{url("https", "::1", 443), "[::1]"}, Case{url("http", "::1", 8080), "[::1]:8080"},
                        Case{url("https", "2001:db8::1", 8443, "/v1"), "[2001:db8::1]:8443"}}) {
    std::string head = upstream_head(client, "/", pool_key("sk-k", {}, c.base), std::nullopt);
    EXPECT_EQ(head.substr(0, head.find("\r\nAuthorization")),
              std::string("GET / HTTP/1.1\r\nHost: ") + c.host)
        << c.host;
    EXPECT_EQ(count_of(head, "Host:"), 1u) << head;
  }
}

// --- upstream_target --------------------------------------------------------

TEST(UpstreamTarget, RemovesTheClientsKeyParameterWhateverTheAuthStyle) {
  for (config::AuthStyle style : {config::AuthStyle::bearer, config::AuthStyle::x_api_key,
                                  config::AuthStyle::x_goog_api_key, config::AuthStyle::api_key}) {
    config::KeyConfig key = pool_key("sk-k", {style, ""});
    EXPECT_EQ(upstream_target("/v1/models?key=a&alt=sse&key=b", {}, key), "/v1/models?alt=sse");
    EXPECT_EQ(upstream_target("/v1/models?key=a", {}, key), "/v1/models");
    EXPECT_EQ(upstream_target("/v1/models?k%65y=a&x=1", {}, key), "/v1/models?x=1");
  }
}

TEST(UpstreamTarget, RemovesEveryPoolQueryAuthParameter) {
  std::vector<std::string> params = {"api_key", "token"};
  EXPECT_EQ(upstream_target("/x?api_key=1&a=b&token=2&keyed=3", params, pool_key("sk-k")), "/x?a=b&keyed=3");
  EXPECT_EQ(upstream_target("/x?token=2", params, pool_key("sk-k", {config::AuthStyle::query, "api_key"})),
            "/x?api_key=sk-k");
  EXPECT_EQ(
      upstream_target("/x?api_key=old&q=1", params, pool_key("sk-k", {config::AuthStyle::query, "api_key"})),
      "/x?q=1&api_key=sk-k");
}

TEST(UpstreamTarget, QueryAuthPercentEncodesTheKey) {
  config::KeyConfig key = pool_key("sk/+=", {config::AuthStyle::query, "key"});
  EXPECT_EQ(upstream_target("/v1beta/models", {"key"}, key), "/v1beta/models?key=sk%2F%2B%3D");
  EXPECT_EQ(upstream_target("/v1beta/models?alt=sse", {"key"}, key),
            "/v1beta/models?alt=sse&key=sk%2F%2B%3D");
}

TEST(UpstreamTarget, PrependsTheBaseUrlPathPrefix) {
  config::KeyConfig key = pool_key("sk-k", {}, url("https", "gateway.example.com", 443, "/openai/v1"));
  EXPECT_EQ(upstream_target("/chat/completions?x=1", {}, key), "/openai/v1/chat/completions?x=1");
  config::KeyConfig query = pool_key("sk-k", {config::AuthStyle::query, "key"},
                                     url("https", "gateway.example.com", 443, "/google"));
  EXPECT_EQ(upstream_target("/v1beta/models?key=x", {"key"}, query), "/google/v1beta/models?key=sk-k");
}

TEST(UpstreamTarget, OtherParametersPassByteForByte) {
  EXPECT_EQ(upstream_target("/x?q=%41%2F+b&empty=&flag", {}, pool_key("sk-k")), "/x?q=%41%2F+b&empty=&flag");
  EXPECT_EQ(upstream_target("/caf\xc3\xa9?n=\xe2\x9c\x93", {}, pool_key("sk-k")),
            "/caf\xc3\xa9?n=\xe2\x9c\x93");
}

// --- client_head ------------------------------------------------------------

// --- WebSocket handshakes ---------------------------------------------------

TEST(WebSocketUpgrade, IsAGetWithUpgradeWebsocketNamedByConnection) {
  EXPECT_TRUE(is_websocket_upgrade(parse_request("GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: "
                                                 "keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\r\n")));
  EXPECT_FALSE(
      is_websocket_upgrade(parse_request("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n")));
  EXPECT_FALSE(is_websocket_upgrade(
      parse_request("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")));
  EXPECT_FALSE(
      is_websocket_upgrade(parse_request("POST / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "
                                         "websocket\r\nContent-Length: 0\r\n\r\n")));
}

TEST(WebSocketUpgrade, KeepsUpgradeAndTheHandshakeFieldsAndPutsThePoolKeyInTheAuthHeader) {
  auto client = parse_request("GET /v1/realtime HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8787\r\n"
                              "Connection: Upgrade\r\n"
                              "Upgrade: websocket\r\n"
                              "Sec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
                              "authorization: Bearer keyshim\r\n"
                              "\r\n");
  EXPECT_EQ(upstream_head(client, "/v1/realtime", pool_key("sk-pool"), std::nullopt),
            "GET /v1/realtime HTTP/1.1\r\n"
            "Host: api.openai.com\r\n"
            "Upgrade: websocket\r\n"
            "Sec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
            "Connection: Upgrade\r\n"
            "Authorization: Bearer sk-pool\r\n"
            "\r\n");
}

TEST(WebSocketUpgrade, AResponsesSocketIsAskedForWithoutCompressionSoItsEventsCanBeRead) {
  auto client =
      parse_request("GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
  std::string head = upstream_head(client, "/v1/responses", pool_key("sk-pool"), std::nullopt);
  EXPECT_EQ(head.find("permessage-deflate"), std::string::npos);
  EXPECT_TRUE(is_responses_socket("/openai/v1/responses?x=1"));
  EXPECT_FALSE(is_responses_socket("/v1/responses/r1"));
}

TEST(WebSocketUpgrade, DropsTheKeyCarryingSubprotocolAndKeepsTheOthers) {
  auto client = parse_request(
      "GET /v1/realtime HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.keyshim, openai-beta.realtime-v1\r\n"
      "\r\n");
  std::string head = upstream_head(client, "/v1/realtime", pool_key("sk-pool"), std::nullopt);
  EXPECT_NE(head.find("Sec-WebSocket-Protocol: realtime, openai-beta.realtime-v1\r\n"), std::string::npos);
  EXPECT_EQ(head.find("keyshim"), std::string::npos);
  EXPECT_EQ(without_key_protocols("openai-insecure-api-key.x"), "");
  EXPECT_EQ(without_key_protocols(" a ,, b "), "a, b");
}

TEST(WebSocketUpgrade, ANonWebSocketUpgradeIsDroppedAsHopByHop) {
  auto client = parse_request(
      "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAA\r\n\r\n");
  std::string head = upstream_head(client, "/", pool_key("sk-pool"), std::nullopt);
  EXPECT_EQ(head.find("Upgrade"), std::string::npos);
}

TEST(ClientHead, UpgradeFramingKeepsTheUpgradeAndSaysConnectionUpgrade) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 101 Switching Protocols\r\n"
                                 "Upgrade: websocket\r\n"
                                 "Connection: Upgrade\r\n"
                                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                 "\r\n");
  EXPECT_EQ(client_head(upstream, Framing::upgrade, std::nullopt, false, pool.redact),
            "HTTP/1.1 101 Switching Protocols\r\n"
            "Upgrade: websocket\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            "Connection: Upgrade\r\n"
            "\r\n");
}

TEST(ClientHead, KeepsTheStatusLinesReasonPhrase) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 200 Fine Thanks\r\nContent-Type: text/plain\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::close, std::nullopt, false, pool.redact),
            "HTTP/1.1 200 Fine Thanks\r\nContent-Type: text/plain\r\n\r\n");
}

TEST(ClientHead, AMissingReasonPhraseGetsTheStandardOne) {
  EchoPool pool;
  ResponseHead upstream;
  upstream.result(http::status::not_found);
  upstream.version(11);
  EXPECT_EQ(client_head(upstream, Framing::none, std::nullopt, false, pool.redact),
            "HTTP/1.1 404 Not Found\r\n\r\n");
}

TEST(ClientHead, DropsHopByHopAndFramingFieldsAndWritesChunked) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 200 OK\r\n"
                                 "Connection: keep-alive, X-Hop\r\n"
                                 "X-Hop: 1\r\n"
                                 "Keep-Alive: timeout=5\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                                 "Content-Type: text/event-stream\r\n"
                                 "Trailer: X-Checksum\r\n"
                                 "x-request-id: req_1\r\n"
                                 "\r\n");
  EXPECT_EQ(client_head(upstream, Framing::chunked, std::nullopt, false, pool.redact),
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream\r\n"
            "x-request-id: req_1\r\n"
            "Transfer-Encoding: chunked\r\n"
            "\r\n");
}

TEST(ClientHead, ContentLengthFramingWritesTheLengthOnce) {
  EchoPool pool;
  auto upstream =
      parse_response("HTTP/1.1 200 OK\r\ncontent-length: 42\r\nContent-Type: application/json\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::content_length, 42, false, pool.redact),
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 42\r\n"
            "\r\n");
}

TEST(ClientHead, CloseFramingWritesNoLengthAndNoChunking) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: a\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::close, std::nullopt, true, pool.redact),
            "HTTP/1.1 200 OK\r\nX-A: a\r\nConnection: close\r\n\r\n");
}

TEST(ClientHead, NoBodyFramingKeepsTheUpstreamsContentLengthForHead) {
  EchoPool pool;
  http::response_parser<http::empty_body, HeadAllocator> parser;
  parser.skip(true); // the answer to a HEAD request
  std::string_view text = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\n\r\n";
  ErrorCode ec;
  parser.put(asio::buffer(text.data(), text.size()), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(client_head(parser.get(), Framing::none, std::nullopt, false, pool.redact),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\n\r\n");
}

TEST(ClientHead, NoBodyFramingDropsAChunkedTransferEncoding) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\nX-A: a\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::none, std::nullopt, false, pool.redact),
            "HTTP/1.1 204 No Content\r\nX-A: a\r\n\r\n");
}

TEST(ClientHead, AddsConnectionCloseOnlyWhenAsked) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::content_length, 2, true, pool.redact),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(client_head(upstream, Framing::content_length, 2, false, pool.redact),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
}

TEST(ClientHead, KeepsTwoSetCookieLinesInOrder) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 200 OK\r\n"
                                 "Set-Cookie: a=1; Path=/\r\n"
                                 "Set-Cookie: b=2; HttpOnly\r\n"
                                 "Content-Length: 0\r\n"
                                 "\r\n");
  EXPECT_EQ(client_head(upstream, Framing::content_length, 0, false, pool.redact),
            "HTTP/1.1 200 OK\r\n"
            "Set-Cookie: a=1; Path=/\r\n"
            "Set-Cookie: b=2; HttpOnly\r\n"
            "Content-Length: 0\r\n"
            "\r\n");
}

TEST(ClientHead, RedactsAPoolKeyEchoedInAFieldValueRawOrPercentEncoded) {
  EchoPool pool;
  auto upstream = parse_response("HTTP/1.1 302 Found\r\n"
                                 "Location: /cb?key=sk%2F%2B%3Dpool-0002&state=1\r\n"
                                 "X-Echo: bad key sk-pool-raw-0001 given\r\n"
                                 "X-Raw-Slashy: sk/+=pool-0002\r\n"
                                 "Content-Length: 0\r\n"
                                 "\r\n");
  std::string head = client_head(upstream, Framing::content_length, 0, false, pool.redact);
  EXPECT_EQ(head, "HTTP/1.1 302 Found\r\n"
                  "Location: /cb?key=" +
                      pool.slashy().fingerprint() +
                      "&state=1\r\n"
                      "X-Echo: bad key " +
                      pool.raw().fingerprint() +
                      " given\r\n"
                      "X-Raw-Slashy: " +
                      pool.slashy().fingerprint() +
                      "\r\n"
                      "Content-Length: 0\r\n"
                      "\r\n");
  EXPECT_EQ(head.find("sk-pool-raw-0001"), std::string::npos);
  EXPECT_EQ(head.find("sk%2F%2B%3Dpool-0002"), std::string::npos);
  EXPECT_EQ(head.find("sk/+=pool-0002"), std::string::npos);
}

} // namespace
} // namespace keyshim::relay
