// keyshim's reports on its pools, through the real server: /health and
// /status grouped by pool, and the token usage each key served, in the
// request log line and in /status.
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

namespace keyshim::test {
namespace {

Scripted reports_sse(std::vector<std::string> pieces) {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = std::move(pieces);
  return s;
}

util::Json reports_parsed(const std::string& body) {
  std::optional<util::Json> doc = util::parse_json(body);
  EXPECT_TRUE(doc) << body;
  return doc ? *doc : util::Json();
}

// The member of a "pools" array named `name`; a null value when absent.
util::Json pool_named(const util::Json& doc, const std::string& name) {
  if (const util::Json* pools = doc.find("pools")) {
    for (const util::Json& pool : pools->items()) {
      if (pool.string_at("name") == name) {
        return pool;
      }
    }
  }
  ADD_FAILURE() << "no pool " << name << " in " << doc.dump();
  return {};
}

// The first of a /status pool's "keys"; a null value when it has none.
util::Json first_key(const util::Json& pool) {
  const util::Json* keys = pool.find("keys");
  if (keys == nullptr || keys->items().empty()) {
    ADD_FAILURE() << "no keys in " << pool.dump();
    return {};
  }
  return keys->items()[0];
}

double number_at(const util::Json& object, std::initializer_list<std::string_view> path) {
  const util::Json* at = &object;
  for (std::string_view name : path) {
    at = at->find(name);
    if (at == nullptr) {
      ADD_FAILURE() << "no " << name << " in " << object.dump();
      return -1;
    }
  }
  return at->as_number(-1);
}

// The logged line containing `needle`, once it has been logged.
std::string log_line(const LogCapture& logs, const std::string& needle) {
  if (!logs.wait_for(needle)) {
    ADD_FAILURE() << "never logged: " << needle << "\n" << logs.text();
    return "";
  }
  std::string text = logs.text();
  std::size_t at = text.find(needle);
  std::size_t begin = text.rfind('\n', at);
  std::size_t end = text.find('\n', at);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? end : end - begin - 1);
}

httplib::Client reports_client_for(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  return client;
}

TEST(PoolStatus, HealthAndStatusAreGroupedByPoolAndAPoolWithoutAKeyIsDegraded) {
  FakeUpstream openai;
  FakeUpstream anthropic;
  FakeUpstream gemini;
  openai.push(json(401, R"({"error":{"message":"invalid key"}})"));
  Shim shim(three_provider_pools(openai.base_url(), anthropic.base_url(), gemini.base_url()), "");
  httplib::Client client = reports_client_for(shim.port());

  auto healthy = client.Get("/health");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
  util::Json health_doc = reports_parsed(healthy->body);
  EXPECT_EQ(health_doc.string_at("status"), "ok");
  EXPECT_EQ(number_at(health_doc, {"keys", "total"}), 3);
  ASSERT_EQ(health_doc.find("pools")->items().size(), 3u);

  auto refused = client.Post("/openai/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401); // the only key: its answer is relayed, the key disabled
  auto degraded = client.Get("/health");
  ASSERT_TRUE(degraded);
  EXPECT_EQ(degraded->status, 200); // other pools still serve: not a reason to restart keyshim
  health_doc = reports_parsed(degraded->body);
  EXPECT_EQ(health_doc.string_at("status"), "degraded");
  EXPECT_EQ(number_at(health_doc, {"keys", "available"}), 2);
  util::Json openai_health = pool_named(health_doc, "openai");
  EXPECT_EQ(openai_health.string_at("route"), "/openai");
  EXPECT_EQ(openai_health.string_at("status"), "unavailable");
  EXPECT_EQ(number_at(openai_health, {"keys", "disabled"}), 1);
  EXPECT_EQ(pool_named(health_doc, "anthropic").string_at("status"), "ok");
  EXPECT_EQ(pool_named(health_doc, "gemini").string_at("status"), "ok");

  auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  util::Json status_doc = reports_parsed(status->body);
  struct Expected {
    std::string pool;
    const FakeUpstream& upstream;
    const PoolKey& key;
    std::string state;
  };
  for (const Expected& e : {Expected{"openai", openai, k_openai_key, "disabled"},
                            Expected{"anthropic", anthropic, k_anthropic_key, "available"},
                            Expected{"gemini", gemini, k_gemini_key, "available"}}) {
    util::Json pool = pool_named(status_doc, e.pool);
    EXPECT_EQ(pool.string_at("route"), "/" + e.pool);
    EXPECT_EQ(pool.string_at("upstream"), e.upstream.base_url());
    EXPECT_EQ(number_at(pool, {"totals", "total"}), 1);
    ASSERT_NE(pool.find("keys"), nullptr);
    ASSERT_EQ(pool.find("keys")->items().size(), 1u) << e.pool;
    const util::Json& key = pool.find("keys")->items()[0];
    EXPECT_EQ(key.string_at("label"), e.key.label);
    EXPECT_EQ(key.string_at("state"), e.state);
  }
  EXPECT_EQ(number_at(first_key(pool_named(status_doc, "openai")), {"today", "failures", "auth"}), 1);
  EXPECT_EQ(status->body.find(k_openai_key.secret), std::string::npos);
}

TEST(PoolUsage, StreamedUsageIsLoggedAndCountedForTheKeyThatServed) {
  LogCapture logs(util::LogLevel::info);
  FakeUpstream openai;
  FakeUpstream anthropic;
  FakeUpstream gemini;
  openai.push(reports_sse(
      {R"(data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]})"
       "\n\n",
       R"(data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})"
       "\n\n",
       "data: [DONE]\n\n"}));
  anthropic.push(reports_sse(
      {"event: message_start\n"
       R"(data: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":25,"output_tokens":1}}})"
       "\n\n",
       "event: content_block_delta\n"
       R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}})"
       "\n\n",
       "event: message_delta\n"
       R"(data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}})"
       "\n\n",
       "event: message_stop\n"
       R"(data: {"type":"message_stop"})"
       "\n\n"}));
  Shim shim(three_provider_pools(openai.base_url(), anthropic.base_url(), gemini.base_url()), "");
  httplib::Client client = reports_client_for(shim.port());
  ASSERT_EQ(client.Post("/openai/v1/chat/completions", R"({"stream":true})", "application/json")->status,
            200);
  ASSERT_EQ(client.Post("/anthropic/v1/messages", R"({"stream":true})", "application/json")->status, 200);
  ASSERT_EQ(client.Post("/openai/v1/embeddings", R"({"input":"x"})", "application/json")->status, 200);

  // The line is written once the response has ended, after the counts.
  EXPECT_NE(log_line(logs, "POST /openai/v1/chat/completions 200").find(" in=12 out=34"), std::string::npos);
  EXPECT_NE(log_line(logs, "POST /anthropic/v1/messages 200").find(" in=25 out=7"), std::string::npos);
  std::string without_usage = log_line(logs, "POST /openai/v1/embeddings 200");
  EXPECT_EQ(without_usage.find(" in="), std::string::npos) << without_usage;
  EXPECT_EQ(without_usage.find(" out="), std::string::npos) << without_usage;

  util::Json status = reports_parsed(client.Get("/status")->body);
  util::Json openai_key = first_key(pool_named(status, "openai"));
  util::Json anthropic_key = first_key(pool_named(status, "anthropic"));
  util::Json gemini_key = first_key(pool_named(status, "gemini"));
  for (const char* span : {"today", "total"}) {
    EXPECT_EQ(number_at(openai_key, {span, "requests"}), 2) << span;
    EXPECT_EQ(number_at(openai_key, {span, "input_tokens"}), 12) << span;
    EXPECT_EQ(number_at(openai_key, {span, "output_tokens"}), 34) << span;
    EXPECT_EQ(number_at(anthropic_key, {span, "input_tokens"}), 25) << span;
    EXPECT_EQ(number_at(anthropic_key, {span, "output_tokens"}), 7) << span;
    EXPECT_EQ(number_at(gemini_key, {span, "requests"}), 0) << span;
    EXPECT_EQ(number_at(gemini_key, {span, "input_tokens"}), 0) << span;
  }
}

} // namespace
} // namespace keyshim::test
