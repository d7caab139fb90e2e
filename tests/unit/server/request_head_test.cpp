#include "server/request_guard.hpp"
#include "server/request_head.hpp"
#include "server/status_json.hpp"

#include <gtest/gtest.h>

namespace keyshim::server {
namespace {

namespace http = relay::http;

// A parsed head as Beast gives it to check_parsed_head.
relay::RequestHead parsed(const char* method, const char* target, unsigned version) {
  relay::RequestHead head;
  head.method_string(method);
  head.target(target);
  head.version(version);
  return head;
}

TEST(RequestHead, FindsTheEndWithCrLfOrBareLf) {
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), 27u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\nHost: a\n\nbody"), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n"), std::string_view::npos);
}

TEST(RequestHead, AcceptsAnOrdinaryHead) {
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", {}).status, 0);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", {}).status, 0);
}

TEST(RequestHead, RefusesAmbiguousOrOversizedInput) {
  HeadLimits limits;
  limits.max_body_bytes = 100;
  EXPECT_EQ(
      check_head("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", limits).status,
      400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", limits).status,
            400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", limits).status, 400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", limits).status, 413);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", limits).status, 400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", limits).status, 400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                       limits)
                .status,
            400);
  EXPECT_EQ(check_head("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", limits).status, 400);
  EXPECT_EQ(check_head("GET / HTTP/1.1\r\nno colon here\r\n\r\n", limits).status, 400);
  EXPECT_EQ(check_head("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", limits).status, 414);
  EXPECT_EQ(check_head("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", limits).status, 431);
}

TEST(RequestHead, ALineOfBlanksIsAFoldNotTheEndOfTheHead) {
  // Found by tests/fuzz/request_head_fuzz: a line of only spaces or tabs
  // ended the checks, so the lines after it went unjudged to Beast, which
  // reads such a line as a fold and parses on.
  HeadLimits limits;
  limits.max_body_bytes = 100;
  EXPECT_EQ(check_head("GET / HTTP/1.1\r\nHost: a\r\n \r\nX: " + std::string(9000, 'a') + "\r\n\r\n", limits)
                .status,
            400);
  EXPECT_EQ(check_head("POST / HTTP/1.1\r\nHost: a\r\n\t\r\nContent-Length: 101\r\n\r\n", limits).status,
            400);
  EXPECT_EQ(check_head("GET / HTTP/1.1\nHost: a\n   \n\n", limits).status, 400);
  EXPECT_EQ(check_head("GET / HTTP/1.1\r\nHost: a\r\n\r\n", limits).status, 0);
}

TEST(RequestHead, ErrorResponsesAreCompleteJson) {
  std::string response = error_response(431, "too \"big\"");
  EXPECT_EQ(response.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u);
  EXPECT_NE(response.find("Connection: close"), std::string::npos);
  EXPECT_NE(response.find(R"(too \"big\")"), std::string::npos);
}

TEST(CheckParsedHead, AcceptsAnOrdinaryPost) {
  relay::RequestHead head = parsed("POST", "/v1/chat/completions?x=1", 11);
  head.insert("Host", "127.0.0.1:8787");
  head.insert("Content-Type", "application/json");
  head.insert("Content-Length", "2");
  EXPECT_EQ(check_parsed_head(head).status, 0);
  head.erase(http::field::content_length);
  head.insert("Transfer-Encoding", "chunked");
  EXPECT_EQ(check_parsed_head(head).status, 0);
}

TEST(CheckParsedHead, RefusesConnectAndTraceWith405) {
  relay::RequestHead connect = parsed("CONNECT", "api.openai.com:443", 11);
  connect.insert("Host", "api.openai.com:443");
  EXPECT_EQ(check_parsed_head(connect).status, 405);
  relay::RequestHead trace = parsed("TRACE", "/", 11);
  trace.insert("Host", "127.0.0.1");
  HeadVerdict verdict = check_parsed_head(trace);
  EXPECT_EQ(verdict.status, 405);
  EXPECT_NE(verdict.message.find("TRACE"), std::string::npos) << verdict.message;
}

TEST(CheckParsedHead, RefusesAbsoluteAndAuthorityFormTargets) {
  for (const char* target : {"http://api.openai.com/v1/models", "https://127.0.0.1:8787/v1",
                             "api.openai.com:443", "127.0.0.1:8787", "*"}) {
    relay::RequestHead head = parsed("GET", target, 11);
    head.insert("Host", "127.0.0.1:8787");
    EXPECT_EQ(check_parsed_head(head).status, 400) << target;
  }
}

TEST(CheckParsedHead, Http11NeedsExactlyOneHost) {
  relay::RequestHead none = parsed("GET", "/v1/models", 11);
  EXPECT_EQ(check_parsed_head(none).status, 400);
  relay::RequestHead two = parsed("GET", "/v1/models", 11);
  two.insert("Host", "127.0.0.1:8787");
  two.insert("Host", "evil.example");
  EXPECT_EQ(check_parsed_head(two).status, 400);
}

TEST(CheckParsedHead, Http10WithoutHostIsAccepted) {
  EXPECT_EQ(check_parsed_head(parsed("GET", "/v1/models", 10)).status, 0);
}

TEST(CheckParsedHead, RefusesTransferEncodingInHttp10) {
  relay::RequestHead head = parsed("POST", "/v1/chat/completions", 10);
  head.insert("Transfer-Encoding", "chunked");
  EXPECT_EQ(check_parsed_head(head).status, 400);
}

TEST(CheckParsedHead, RefusesATransferEncodingOtherThanChunked) {
  // The header's contract: "a Transfer-Encoding only in HTTP/1.1 and only
  // \"chunked\"". Beast reads `gzip` or `chunked, gzip` as a request with no
  // body and parses the body bytes as the next request.
  for (const char* coding : {"gzip", "chunked, gzip", "gzip, chunked"}) {
    relay::RequestHead head = parsed("POST", "/v1/chat/completions", 11);
    head.insert("Host", "127.0.0.1:8787");
    head.insert("Transfer-Encoding", coding);
    EXPECT_EQ(check_parsed_head(head).status, 400) << coding;
  }
}

TEST(CheckParsedHead, RefusalsBecomeACompleteErrorResponse) {
  std::string response = error_response(405, "TRACE is not relayed");
  EXPECT_EQ(response.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u);
  EXPECT_NE(response.find("\r\nAllow: "), std::string::npos);
  EXPECT_NE(response.find("Connection: close"), std::string::npos);
}

TEST(RequestHead, ErrorResponseBytesAreExact) {
  const std::string too_large = R"({"error":{"message":"keyshim: body over 1 bytes",)"
                                R"("type":"keyshim_bad_request","code":"http_413"}})";
  EXPECT_EQ(error_response(413, "body over 1 bytes"),
            "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(too_large.size()) + "\r\nConnection: close\r\n\r\n" + too_large);
  const std::string trace = R"({"error":{"message":"keyshim: TRACE is not relayed",)"
                            R"("type":"keyshim_bad_request","code":"http_405"}})";
  EXPECT_EQ(error_response(405, "TRACE is not relayed"),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\n"
            "Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\nContent-Length: " +
                std::to_string(trace.size()) + "\r\nConnection: close\r\n\r\n" + trace);
}

TEST(RequestGuard, LoopbackHostHeaders) {
  for (const char* ok : {"", "localhost", "LocalHost:8787", "localhost.:1", "127.0.0.1", "127.255.0.1:1",
                         "127.0.0.0", "127.1.22.255:0", "[::1]", "[::1]:8787"}) {
    EXPECT_TRUE(is_loopback_host_header(ok)) << ok;
  }
  for (const char* bad : {"example.com",
                          "127.0.0.1.example.com",
                          "0x7f.1",
                          "127.1",
                          "[::2]",
                          "[::1]x",
                          "localhost:80a",
                          "128.0.0.1",
                          "[::ffff:127.0.0.1]",
                          "127.0.0.01",
                          "127.000.0.1",
                          "0127.0.0.1",
                          "127.0.0.1.",
                          "127.0.0.256",
                          "127.0.0",
                          "127..0.1",
                          "1270.0.0.1",
                          "127.0.0.1 ",
                          "127.0.0.1:",
                          "localhostx",
                          ":8787"}) {
    EXPECT_FALSE(is_loopback_host_header(bad)) << bad;
  }
}

TEST(RequestGuard, OriginsMustBeListedExactly) {
  std::vector<std::string> allowed = {"http://localhost:3000"};
  EXPECT_TRUE(origin_allowed("http://localhost:3000", allowed));
  EXPECT_FALSE(origin_allowed("http://localhost:3001", allowed));
  EXPECT_FALSE(origin_allowed("null", allowed));
  EXPECT_FALSE(origin_allowed("http://localhost:3000", {}));
}

TEST(RequestGuard, TokenIsAcceptedWhereverClientsPutTheirKey) {
  util::Secret token("tok-123");
  auto with = [](const char* name, const char* value) {
    relay::RequestHead head;
    head.method_string("POST");
    head.target("/v1/chat/completions");
    head.version(11);
    head.insert(name, value);
    return head;
  };
  auto at = [](const char* target) {
    relay::RequestHead head;
    head.method_string("GET");
    head.target(target);
    head.version(11);
    return head;
  };
  EXPECT_TRUE(presents_token(with("Authorization", "Bearer tok-123"), token));
  EXPECT_TRUE(presents_token(with("authorization", "bearer tok-123"), token));
  EXPECT_TRUE(presents_token(with("x-api-key", "tok-123"), token));
  EXPECT_TRUE(presents_token(with("X-Goog-Api-Key", "tok-123"), token));
  EXPECT_TRUE(presents_token(with("api-key", "tok-123"), token));
  EXPECT_FALSE(presents_token(with("Authorization", "Bearer tok-1234"), token));
  EXPECT_FALSE(presents_token(with("x-api-key", "tok-12"), token));
  EXPECT_FALSE(presents_token(at("/v1/models"), token));
  EXPECT_TRUE(presents_token(at("/v1/models?key=tok-123"), token));
  EXPECT_TRUE(presents_token(at("/v1/models?alt=sse&key=tok%2D123"), token));
  EXPECT_FALSE(presents_token(at("/v1/models?key=tok-124"), token));
}

PoolReport pool_with(std::string name, pool::Counts counts) {
  return {name, name == "default" ? "/" : "/" + name, "https://api.openai.com", {}, counts};
}

TEST(StatusJson, HealthSaysUnavailableWithoutAvailableKeys) {
  EXPECT_EQ(health_json({pool_with("default", {2, 0, 1, 1})}),
            R"({"status":"unavailable","keys":{"total":2,"available":0,"cooling":1,"disabled":1},)"
            R"("pools":[{"name":"default","route":"/","status":"unavailable",)"
            R"("keys":{"total":2,"available":0,"cooling":1,"disabled":1}}]})");
}

TEST(StatusJson, HealthIsDegradedWhenOnePoolHasNoKeyAvailable) {
  std::vector<PoolReport> pools = {pool_with("openai", {1, 1, 0, 0}), pool_with("anthropic", {1, 0, 1, 0})};
  std::string json = health_json(pools);
  EXPECT_EQ(
      json.rfind(R"({"status":"degraded","keys":{"total":2,"available":1,"cooling":1,"disabled":0})", 0), 0u)
      << json;
  EXPECT_NE(json.find(R"({"name":"anthropic","route":"/anthropic","status":"unavailable")"),
            std::string::npos)
      << json;
  EXPECT_FALSE(every_pool_serves(pools));
  EXPECT_TRUE(every_pool_serves({pools[0]}));
  EXPECT_TRUE(some_pool_serves(pools));
  EXPECT_FALSE(some_pool_serves({pools[1]}));
}

TEST(StatusJson, CoolingKeysCarryTheirEndAndReason) {
  pool::KeySnapshot key{"team", "sk-t~12345678", "https://api.openai.com", {}};
  util::TimePoint now = util::TimePoint(std::chrono::seconds(1'800'000'000));
  key.health.state = pool::KeyState::cooling;
  key.health.until = now + std::chrono::seconds(90);
  key.health.reason = "429 Retry-After";
  PoolReport report = pool_with("default", {1, 0, 1, 0});
  report.keys = {key};
  std::string json = status_json({report}, now, InstanceInfo{42, 1, "/k.toml", "", "127.0.0.1:8787"});
  EXPECT_NE(
      json.find(
          R"("state":"cooling","until":"2027-01-15T08:01:30Z","resumes_in_ms":90000,"reason":"429 Retry-After")"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("pid":42)"), std::string::npos);
  EXPECT_NE(json.find(R"("pools":[{"name":"default","route":"/","upstream":"https://api.openai.com")"),
            std::string::npos)
      << json;
}

TEST(StatusJson, KeysCarryTheirUsageForTodayAndSinceStart) {
  pool::KeySnapshot key{"team", "sk-t~12345678", "https://api.openai.com", {}};
  key.health.today.requests = 3;
  key.health.today.failures[static_cast<std::size_t>(pool::FailureClass::rate_limit)] = 1;
  key.health.today.input_tokens = 120;
  key.health.today.output_tokens = 45;
  key.health.total = key.health.today;
  key.health.total.requests = 7;
  PoolReport report = pool_with("default", {1, 1, 0, 0});
  report.keys = {key};
  std::string json = status_json({report}, util::TimePoint{}, InstanceInfo{});
  EXPECT_NE(json.find(R"("today":{"requests":3,"failures":{"rate_limit":1,"auth":0,"quota":0,"server":0,)"
                      R"("transport":0},"input_tokens":120,"output_tokens":45})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("total":{"requests":7,)"), std::string::npos) << json;
}

} // namespace
} // namespace keyshim::server
