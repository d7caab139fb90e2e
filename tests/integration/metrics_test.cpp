// GET /metrics through the real server: behind the client_token like
// /status, answered by keyshim itself, and showing what failover did.
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

namespace keyshim::test {
namespace {

httplib::Result metrics_post(const Shim& shim, const std::string& body = R"({"messages":[]})") {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post("/v1/chat/completions", body, "application/json");
}

std::string scrape(const Shim& shim) {
  httplib::Client client("127.0.0.1", shim.port());
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) {
    ADD_FAILURE() << "GET /metrics failed";
    return "";
  }
  return res->body;
}

// The value of the sample `series` (name and labels, as written), or -1.
double sample(const std::string& text, const std::string& series) {
  std::size_t at = ("\n" + text).find("\n" + series + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(text.substr(at + series.size() + 1));
}

TEST(MetricsEndpoint, NeedsTheClientTokenWhenOneIsSet) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "", "client_token = \"shim-token-123\"\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/metrics", {{"Authorization", "Bearer nope"}})->status, 401);
  auto res = client.Get("/metrics", {{"Authorization", "Bearer shim-token-123"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(sample(res->body, R"(keyshim_key_up{pool="default",key="k0"})"), 1);
  EXPECT_EQ(sample(res->body, "keyshim_config_generation"), 1);
  EXPECT_EQ(client.Get("/metrics", {{"x-api-key", "shim-token-123"}})->status, 200);
  EXPECT_EQ(upstream.request_count(), 0u) << "keyshim answers /metrics itself";
}

TEST(MetricsEndpoint, CountersAndCooldownShowA429Failover) {
  FakeUpstream upstream;
  upstream.push(json(429, R"({"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}})",
                     {{"Retry-After", "20"}}));
  upstream.push(json(200, R"({"id":"chatcmpl-1","usage":{"prompt_tokens":12,"completion_tokens":3}})"));
  Shim shim(pool_toml(2), upstream.base_url());
  auto res = metrics_post(shim);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);

  std::string text = scrape(shim);
  EXPECT_EQ(sample(text, R"(keyshim_key_attempts_total{pool="default",key="k0"})"), 1);
  EXPECT_EQ(sample(text, R"(keyshim_key_failures_total{pool="default",key="k0",class="rate_limit"})"), 1);
  EXPECT_EQ(sample(text, R"(keyshim_key_responses_ok_total{pool="default",key="k0"})"), 0);
  EXPECT_EQ(sample(text, R"(keyshim_key_up{pool="default",key="k0"})"), 0);
  EXPECT_EQ(sample(text, R"(keyshim_key_state{pool="default",key="k0",state="cooling"})"), 1);
  double left = sample(text, R"(keyshim_key_cooldown_seconds{pool="default",key="k0"})");
  EXPECT_GT(left, 15);
  EXPECT_LE(left, 20);
  EXPECT_EQ(sample(text, R"(keyshim_pool_keys{pool="default",state="cooling"})"), 1);

  EXPECT_EQ(sample(text, R"(keyshim_key_attempts_total{pool="default",key="k1"})"), 1);
  EXPECT_EQ(sample(text, R"(keyshim_key_failures_total{pool="default",key="k1",class="rate_limit"})"), 0);
  EXPECT_EQ(sample(text, R"(keyshim_key_responses_ok_total{pool="default",key="k1"})"), 1);
  EXPECT_EQ(sample(text, R"(keyshim_key_input_tokens_total{pool="default",key="k1"})"), 12);
  EXPECT_EQ(sample(text, R"(keyshim_key_output_tokens_total{pool="default",key="k1"})"), 3);
  EXPECT_EQ(sample(text, R"(keyshim_key_response_bytes_total{pool="default",key="k1"})"),
            static_cast<double>(res->body.size()));
  EXPECT_EQ(sample(text, R"(keyshim_key_response_bytes_total{pool="default",key="k0"})"), 0)
      << "a failed attempt relays nothing";
  EXPECT_EQ(sample(text, R"(keyshim_key_in_flight{pool="default",key="k1"})"), 0);
  EXPECT_EQ(sample(text, R"(keyshim_key_up{pool="default",key="k1"})"), 1);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(text.find(test_key(i)), std::string::npos) << "key material in /metrics";
  }
}

TEST(MetricsEndpoint, AModelCoolingOnAKeyHasItsOwnCooldown) {
  FakeUpstream upstream;
  // A 429 without a quota signal for a named model cools that model only.
  upstream.push(
      json(429, R"({"error":{"message":"Rate limit reached for gpt-4o"}})", {{"Retry-After", "30"}}));
  upstream.push(json(200, R"({"id":"chatcmpl-2"})"));
  Shim shim(pool_toml(2), upstream.base_url());
  auto res = metrics_post(shim, R"({"model":"gpt-4o","messages":[]})");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::string text = scrape(shim);
  double left = sample(text, R"(keyshim_model_cooldown_seconds{pool="default",key="k0",model="gpt-4o"})");
  EXPECT_GT(left, 25);
  EXPECT_LE(left, 30);
  EXPECT_EQ(sample(text, R"(keyshim_key_up{pool="default",key="k0"})"), 1) << "the key serves other models";
}

TEST(MetricsEndpoint, OnlyGetIsAnsweredByKeyshim) {
  FakeUpstream upstream;
  upstream.push(json(200, "{}"));
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  auto res = client.Post("/metrics", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(upstream.request_count(), 1u) << "POST /metrics is the upstream's, like POST /status";
}

} // namespace
} // namespace keyshim::test
