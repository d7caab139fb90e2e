// Request capture through the real server: which exchanges the ring keeps,
// its size and body caps, the memory it reports, redaction of every key and
// credential, and /captures behind the client_token (docs/behaviour.md §12.1).
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/http_ws_peers.hpp"
#include "support/log_capture.hpp"
#include "util/ascii.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fmt/format.h>

#include <chrono>
#include <string_view>
#include <thread>

namespace keyshim::test {
namespace {

// A key whose percent-encoded form differs from it, in a second pool.
const std::string k_odd_key = "sk-odd/key+with=signs-0123456789";

httplib::Result post(const Shim& shim, const std::string& target, const std::string& body,
                     const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post(target, headers, body, "application/json");
}

// GET `path` on the shim, as JSON; fails the test when it is not a 200.
util::Json get_json(const Shim& shim, const std::string& path, const std::string& token = "") {
  httplib::Client client("127.0.0.1", shim.port());
  httplib::Headers headers;
  if (!token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  auto res = client.Get(path, headers);
  EXPECT_TRUE(res);
  if (!res) {
    return {};
  }
  EXPECT_EQ(res->status, 200) << res->body;
  return util::parse_json(res->body).value_or(util::Json());
}

std::vector<std::uint64_t> ids(const util::Json& list) {
  std::vector<std::uint64_t> out;
  for (const util::Json& entry : list.find("entries")->items()) {
    out.push_back(entry.find("id")->as_unsigned().value_or(0));
  }
  return out;
}

std::string capture_text(const Shim& shim, std::uint64_t id) {
  return get_json(shim, "/captures/" + std::to_string(id)).dump();
}

TEST(Capture, TheRingKeepsTheLastNExchangesAndIdsOnlyGrow) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "capture = \"all\"\n", "capture_size = 3\n"), upstream.base_url());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(post(shim, "/v1/chat/completions", R"({"model":"gpt-4o","n":)" + std::to_string(i) + "}"));
  }
  util::Json list = get_json(shim, "/captures");
  EXPECT_EQ(ids(list), (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_EQ(list.find("size")->as_unsigned(), 3u);
  const util::Json& last = list.find("entries")->items().back();
  EXPECT_EQ(last.string_at("model"), "gpt-4o");
  EXPECT_EQ(last.find("status")->as_unsigned(), 200u);
  EXPECT_EQ(ids(get_json(shim, "/captures?after=4")), (std::vector<std::uint64_t>{5}));
  httplib::Client client("127.0.0.1", shim.port());
  auto gone = client.Get("/captures/1");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  EXPECT_NE(gone->body.find("no capture 1: the ring holds 3..5"), std::string::npos) << gone->body;
}

TEST(Capture, BodiesAreCappedAtTheBodyLimitAndSayHowLargeTheyWere) {
  FakeUpstream upstream;
  upstream.push(json(200, R"({"text":")" + std::string(5000, 'r') + "\"}"));
  Shim shim(pool_toml(1, "capture = \"all\"\n", "capture_body_limit = \"1KiB\"\n"), upstream.base_url());
  std::string body = R"({"text":")" + std::string(5000, 'q') + "\"}";
  ASSERT_TRUE(post(shim, "/v1/chat/completions", body));
  util::Json entry = get_json(shim, "/captures/1");
  const util::Json& request = *entry.find("request");
  const util::Json& response = *entry.find("response");
  EXPECT_TRUE(request.find("body_truncated")->as_bool());
  EXPECT_EQ(request.find("body_size")->as_unsigned(), body.size());
  EXPECT_EQ(request.string_at("body")->size(), 1024u);
  EXPECT_TRUE(response.find("body_truncated")->as_bool());
  EXPECT_EQ(response.find("body_size")->as_unsigned(), 5011u);
  EXPECT_EQ(response.string_at("body")->size(), 1024u);
  EXPECT_EQ(get_json(shim, "/captures").find("body_limit")->as_unsigned(), 1024u);
}

TEST(Capture, NoKeyOrCredentialReachesTheCaptureInAnyForm) {
  FakeUpstream upstream;
  std::string echoed = "key " + test_key(0) + " and " + util::percent_encode(k_odd_key) + " and " + k_odd_key;
  upstream.push(json(401, R"({"error":{"message":")" + echoed + "\"}}"));
  upstream.push(json(200, R"({"echo":")" + echoed + "\"}"));
  std::string toml = pool_toml(2, "capture = \"all\"\n") +
                     pool_section("other", upstream.base_url(), "", {PoolKey("odd", k_odd_key)});
  Shim shim(toml, upstream.base_url());
  std::string target = "/v1/chat/completions?key=" + test_key(1) + "&x=" + util::percent_encode(k_odd_key);
  httplib::Headers headers{{"x-api-key", "placeholder-credential"},
                           {"Cookie", "session=cookie-secret"},
                           {"X-Note", "note " + test_key(1)}};
  ASSERT_TRUE(post(shim, target, R"({"messages":[")" + echoed + "\"]}", headers));
  std::string list = get_json(shim, "/captures").dump();
  std::string entry = capture_text(shim, 1);
  for (const std::string& text : {list, entry}) {
    for (const std::string& secret : {test_key(0), test_key(1), k_odd_key, util::percent_encode(k_odd_key),
                                      util::percent_encode(k_odd_key, true),
                                      std::string("placeholder-credential"), std::string("cookie-secret")}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;
    }
  }
  EXPECT_NE(entry.find("sk-t~"), std::string::npos) << "keys are shown by their fingerprints";
  EXPECT_NE(entry.find("\"X-Note\""), std::string::npos) << "other fields are kept";
}

TEST(Capture, ErrorsModeKeepsFailoversAndErrorsButNotAPlainSuccess) {
  FakeUpstream upstream;
  upstream.push(json(200, R"({"ok":1})"));
  upstream.push(json(429, "{}", {{"Retry-After", "30"}}));
  upstream.push(json(200, R"({"ok":2})"));
  upstream.push(json(400, R"({"error":{"message":"bad request"}})"));
  Shim shim(pool_toml(2), upstream.base_url()); // capture = "errors" by default
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(post(shim, "/v1/chat/completions", "{}"));
  }
  util::Json list = get_json(shim, "/captures");
  ASSERT_EQ(list.find("entries")->items().size(), 2u) << list.dump();
  const util::Json& failover = list.find("entries")->items().at(0);
  EXPECT_EQ(failover.find("status")->as_unsigned(), 200u);
  const util::Json::Array& chain = failover.find("chain")->items();
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain.at(0).string_at("key"), "k0");
  EXPECT_EQ(chain.at(0).find("status")->as_unsigned(), 429u);
  EXPECT_EQ(chain.at(0).string_at("verdict"), "cool");
  EXPECT_EQ(chain.at(1).string_at("verdict"), "ok");
  EXPECT_EQ(list.find("entries")->items().at(1).find("status")->as_unsigned(), 400u);
  EXPECT_EQ(ids(get_json(shim, "/captures?status=400")), (std::vector<std::uint64_t>{2}));
}

// A stream cut after the commit point is kept in errors mode, with the head
// its client got: the head is copied only once the capture is known to be
// kept, at the exchange's end.
TEST(Capture, ErrorsModeKeepsAStreamCutAfterTheCommitWithItsResponseHead) {
  FakeUpstream upstream;
  Scripted stream;
  stream.headers = {{"Content-Type", "text/event-stream"}, {"X-Request-Id", "req-cut-7"}};
  stream.pieces = {"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"};
  stream.cut_after_pieces = 1;
  upstream.push(stream);
  upstream.push(json(200, R"({"ok":1})"));
  Shim shim(pool_toml(1), upstream.base_url());             // capture = "errors" by default
  post(shim, "/v1/chat/completions", R"({"stream":true})"); // cut: the client sees an error
  ASSERT_TRUE(post(shim, "/v1/chat/completions", "{}"));    // a plain success: not kept
  util::Json list = get_json(shim, "/captures");
  ASSERT_EQ(list.find("entries")->items().size(), 1u) << list.dump();
  util::Json entry = get_json(shim, "/captures/1");
  EXPECT_EQ(entry.find("status")->as_unsigned(), 200u);
  EXPECT_FALSE(entry.string_at("error")->empty()) << entry.dump();
  const util::Json& response = *entry.find("response");
  EXPECT_NE(response.find("head")->dump().find("req-cut-7"), std::string::npos) << entry.dump();
  EXPECT_TRUE(response.find("events")->as_bool());
  EXPECT_EQ(response.string_at("body"), "data: {\"n\":1}\n\n");
}

// Stopping an answer half-way (Esc in a coding tool) is the client's own
// doing: errors mode leaves it out, so that a day of such stops does not push
// the real failures out of the ring; all mode keeps it, with why it ended.
TEST(Capture, ErrorsModeLeavesOutAStreamTheClientStoppedReading) {
  FakeUpstream upstream;
  for (int i = 0; i < 2; ++i) {
    Scripted stream;
    stream.headers = {{"Content-Type", "text/event-stream"}};
    stream.pieces = {"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"};
    stream.hold_after_first_piece = true;
    upstream.push(stream);
  }
  std::string request = make_request("POST", "/v1/chat/completions", R"({"stream":true})", "");
  for (const char* mode : {"errors", "all"}) {
    LogCapture log(util::LogLevel::info);
    Shim shim(pool_toml(1, fmt::format("capture = \"{}\"\n", mode)), upstream.base_url());
    {
      RawConnection conn(shim.port());
      conn.send(request);
      ASSERT_TRUE(conn.read_until("\"n\":1", 10s)) << mode;
    } // the client hangs up
    ASSERT_TRUE(log.wait_for("client went away mid-stream")) << log.text();
    util::Json list = get_json(shim, "/captures"); // after the exchange's end, on the same loop
    const util::Json::Array& entries = list.find("entries")->items();
    ASSERT_EQ(entries.size(), std::string_view(mode) == "all" ? 1u : 0u) << mode << list.dump();
    if (!entries.empty()) {
      EXPECT_EQ(entries.at(0).find("status")->as_unsigned(), 200u);
      EXPECT_EQ(get_json(shim, "/captures/1").string_at("error"), "client went away mid-stream");
    }
  }
}

TEST(Capture, ErrorsModeKeepsAServerErrorEveryKeyGot) {
  FakeUpstream upstream;
  for (int i = 0; i < 8; ++i) {
    upstream.push(json(500, R"({"error":{"message":"boom"}})"));
  }
  Shim shim(pool_toml(1, "max_attempts = 1\n"), upstream.base_url());
  auto res = post(shim, "/v1/chat/completions", "{}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  util::Json entry = get_json(shim, "/captures/1");
  EXPECT_EQ(entry.find("status")->as_unsigned(), 500u);
  EXPECT_NE(entry.find("response")->string_at("body")->find("boom"), std::string::npos);
}

TEST(Capture, OffCapturesNothing) {
  FakeUpstream upstream;
  upstream.push(json(500, "{}"));
  Shim shim(pool_toml(1, "capture = \"off\"\nmax_attempts = 1\n"), upstream.base_url());
  ASSERT_TRUE(post(shim, "/v1/chat/completions", "{}"));
  ASSERT_TRUE(post(shim, "/v1/chat/completions", "{}"));
  util::Json list = get_json(shim, "/captures");
  EXPECT_TRUE(list.find("entries")->items().empty());
  EXPECT_EQ(list.find("bytes")->as_unsigned(), 0u);
}

TEST(Capture, AStreamedAnswerKeepsItsFirstEvents) {
  FakeUpstream upstream;
  Scripted stream;
  stream.headers = {{"Content-Type", "text/event-stream"}};
  for (int i = 0; i < 40; ++i) {
    stream.pieces.push_back("data: {\"n\":" + std::to_string(i) + ",\"pad\":\"" + std::string(100, 'p') +
                            "\"}\n\n");
  }
  upstream.push(stream);
  Shim shim(pool_toml(1, "capture = \"all\"\n", "capture_body_limit = \"1KiB\"\n"), upstream.base_url());
  auto res = post(shim, "/v1/chat/completions", R"({"stream":true})");
  ASSERT_TRUE(res);
  util::Json entry = get_json(shim, "/captures/1");
  const util::Json& response = *entry.find("response");
  EXPECT_TRUE(response.find("events")->as_bool());
  EXPECT_TRUE(entry.find("stream")->as_bool());
  EXPECT_TRUE(response.find("body_truncated")->as_bool());
  EXPECT_EQ(response.find("body_size")->as_unsigned(), res->body.size());
  EXPECT_EQ(response.string_at("body"), res->body.substr(0, 1024));
}

TEST(Capture, MemoryStaysWithinItsBoundUnderAFloodOfLargeRequests) {
  FakeUpstream upstream;
  for (int i = 0; i < 30; ++i) {
    upstream.push(json(200, R"({"r":")" + std::string(200'000, 'r') + "\"}"));
  }
  Shim shim(pool_toml(1, "capture = \"all\"\n", "capture_size = 5\ncapture_body_limit = \"4KiB\"\n"),
            upstream.base_url());
  httplib::Headers many;
  for (int i = 0; i < 200; ++i) {
    many.emplace("X-Field-" + std::to_string(i), std::string(200, 'h'));
  }
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(post(shim, "/v1/chat/completions", std::string(300'000, 'b'), many));
  }
  util::Json list = get_json(shim, "/captures");
  EXPECT_EQ(list.find("entries")->items().size(), 5u);
  std::uint64_t bytes = list.find("bytes")->as_unsigned().value_or(0);
  std::uint64_t bound = 5 * (2 * 4096 + 48 * 1024);
  EXPECT_GT(bytes, 5u * 2 * 4096);
  EXPECT_LE(bytes, bound);
  EXPECT_NE(capture_text(shim, 30).find("more fields not kept"), std::string::npos);
  util::Json whole = get_json(shim, "/status");
  const util::Json* status = whole.find("captures");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->find("entries")->as_unsigned(), 5u);
  EXPECT_EQ(status->find("bytes")->as_unsigned(), bytes);
}

TEST(Capture, CapturesNeedTheClientToken) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "capture = \"all\"\n", "client_token = \"capture-token-123\"\n"),
            upstream.base_url());
  ASSERT_TRUE(post(shim, "/v1/chat/completions", "{}", {{"Authorization", "Bearer capture-token-123"}}));
  httplib::Client client("127.0.0.1", shim.port());
  for (const char* path : {"/captures", "/captures/1"}) {
    auto refused = client.Get(path);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << path;
  }
  std::string entry = get_json(shim, "/captures/1", "capture-token-123").dump();
  EXPECT_EQ(entry.find("capture-token-123"), std::string::npos) << entry;
}

TEST(Capture, AWebSocketIsCapturedWhenItClosesWithItsHandshakeChain) {
  WsUpstream upstream;
  upstream.refuse_next(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  Shim shim(pool_toml(2, "capture = \"all\"\n"), upstream.base_url());
  {
    WsClient client(shim.port(), "/v1/responses");
    ASSERT_EQ(client.status(), 101);
  }
  util::Json list;
  for (int i = 0; i < 200 && (!list.find("entries") || list.find("entries")->items().empty()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25)); // the entry is kept when the tunnel ends
    list = get_json(shim, "/captures");
  }
  ASSERT_EQ(list.find("entries")->items().size(), 1u) << list.dump();
  util::Json entry = get_json(shim, "/captures/1");
  const util::Json::Array& chain = entry.find("chain")->items();
  ASSERT_EQ(chain.size(), 2u) << entry.dump();
  EXPECT_EQ(chain.at(0).find("status")->as_unsigned(), 429u);
  EXPECT_EQ(chain.at(1).find("status")->as_unsigned(), 101u);
  EXPECT_EQ(entry.find("status")->as_unsigned(), 101u);
  EXPECT_FALSE(entry.find("response")->find("head")->items().empty()) << entry.dump();
  EXPECT_EQ(entry.dump().find("sk-test-key"), std::string::npos) << entry.dump();
}

TEST(Capture, ABadQueryIsRefusedNamingTheParameter) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  auto res = client.Get("/captures?status=abc");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("status must be a whole number"), std::string::npos);
}

} // namespace
} // namespace keyshim::test
