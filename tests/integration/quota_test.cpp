// Quotas seen before they bite (docs/behaviour.md §4.1), through the real
// server: the rate limits a provider reports on a success keep a spent key
// out until its reset without a 429, steer round-robin to keys with
// headroom, and show in /status and /metrics.
#include "server/status_json.hpp"
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace keyshim::test {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

Scripted quota_ok(Headers limits = {}) {
  return json(200, R"({"id":"chatcmpl-1"})", std::move(limits));
}

// OpenAI's figures: `remaining` of 500 requests, whole again after `reset`.
Headers openai_requests(const std::string& remaining, const std::string& reset) {
  return {{"x-ratelimit-limit-requests", "500"},     {"x-ratelimit-remaining-requests", remaining},
          {"x-ratelimit-reset-requests", reset},     {"x-ratelimit-limit-tokens", "30000"},
          {"x-ratelimit-remaining-tokens", "29000"}, {"x-ratelimit-reset-tokens", "2s"}};
}

std::vector<std::string> quota_keys_seen(const FakeUpstream& upstream) {
  std::vector<std::string> keys;
  for (const SeenRequest& r : upstream.seen()) {
    keys.push_back(r.header("Authorization").substr(7));
  }
  return keys;
}

httplib::Result quota_post(const Shim& shim, const std::string& body = R"({"messages":[]})") {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post("/v1/chat/completions", body, "application/json");
}

pool::KeyHealth quota_health(Shim& shim, std::size_t index) {
  return shim.server().state()->pools.at(0).keys->health(index);
}

std::string quota_get(const Shim& shim, const std::string& path) {
  httplib::Client client("127.0.0.1", shim.port());
  auto res = client.Get(path);
  EXPECT_TRUE(res && res->status == 200) << path;
  return res ? res->body : "";
}

TEST(Quota, ASuccessWithNoRequestsLeftSendsTheNextRequestToAnotherKey) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("0", "20s")));
  upstream.push(quota_ok());
  Shim shim(pool_toml(2), upstream.base_url()); // ordered: k0 would take every request
  auto first = quota_post(shim);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  auto second = quota_post(shim);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(1)}))
      << "k0 never saw the request its quota could not serve";
  pool::KeyHealth h = quota_health(shim, 0);
  EXPECT_EQ(h.state, pool::KeyState::cooling);
  EXPECT_EQ(h.reason, "quota: 0 requests left");
  EXPECT_EQ(h.error_count, 0u) << "a spent quota is not the key's failure";
  EXPECT_EQ(h.ok_count, 1u);
  auto left = h.until - std::chrono::system_clock::now();
  EXPECT_GT(left, std::chrono::seconds(15));
  EXPECT_LE(left, std::chrono::seconds(20));
}

TEST(Quota, TheKeyServesAgainOnceItsLimitResets) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("0", "300ms")));
  Shim shim(pool_toml(2), upstream.base_url());
  ASSERT_TRUE(quota_post(shim));
  ASSERT_TRUE(quota_post(shim));
  bool back = false;
  for (int i = 0; i < 200 && !back; ++i) {
    back = quota_health(shim, 0).state == pool::KeyState::available;
    if (!back) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_TRUE(back) << "the set-aside ends at the reset";
  ASSERT_TRUE(quota_post(shim));
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(1), test_key(0)}));
}

TEST(Quota, AnthropicSpentTokensSetOnlyThatModelAside) {
  FakeUpstream upstream;
  std::string reset = server::rfc3339_utc(std::chrono::system_clock::now() + std::chrono::seconds(30));
  upstream.push(quota_ok({{"anthropic-ratelimit-tokens-limit", "80000"},
                          {"anthropic-ratelimit-tokens-remaining", "0"},
                          {"anthropic-ratelimit-tokens-reset", reset}}));
  Shim shim(pool_toml(2), upstream.base_url());
  const std::string sonnet = R"({"model":"claude-sonnet-4-5","messages":[]})";
  ASSERT_TRUE(quota_post(shim, sonnet));
  ASSERT_TRUE(quota_post(shim, sonnet));
  ASSERT_TRUE(quota_post(shim, R"({"model":"claude-haiku-4-5","messages":[]})"));
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(1), test_key(0)}));
  pool::KeyHealth h = quota_health(shim, 0);
  EXPECT_EQ(h.state, pool::KeyState::available) << "the key serves other models";
  ASSERT_EQ(h.models.size(), 1u);
  EXPECT_EQ(h.models[0].model, "claude-sonnet-4-5");
  EXPECT_EQ(h.models[0].reason, "quota: 0 tokens left");
}

TEST(Quota, RoundRobinAvoidsTheKeyRunningLow) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("20", "60s")));  // k0: 4 % left
  upstream.push(quota_ok(openai_requests("400", "60s"))); // k1: 80 % left
  Shim shim(pool_toml(3, "strategy = \"round-robin\"\n"), upstream.base_url());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(quota_post(shim));
  }
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(1), test_key(2),
                                                                 test_key(1), test_key(2), test_key(1)}))
      << "k2 reported nothing: as good as plenty; k0 waits while others have headroom";
}

TEST(Quota, EveryKeySpentAnswers503UntilTheEarliestReset) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("0", "40s")));
  upstream.push(quota_ok(openai_requests("0", "20s")));
  Shim shim(pool_toml(2), upstream.base_url());
  ASSERT_TRUE(quota_post(shim));
  ASSERT_TRUE(quota_post(shim));
  auto res = quota_post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  int retry_after = std::stoi(res->get_header_value("Retry-After"));
  EXPECT_GE(retry_after, 15);
  EXPECT_LE(retry_after, 20);
  EXPECT_EQ(upstream.request_count(), 2u);
}

TEST(Quota, ARequestWaitsForTheResetWithinMaxWait) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("0", "400ms")));
  Shim shim(pool_toml(1, "max_wait = \"10s\"\n"), upstream.base_url());
  ASSERT_TRUE(quota_post(shim));
  auto started = std::chrono::steady_clock::now();
  auto res = quota_post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"ok":true})");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(300));
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(0)}));
}

TEST(Quota, StatusAndMetricsShowTheLastReportedFigures) {
  FakeUpstream upstream;
  upstream.push(quota_ok(openai_requests("499", "20s")));
  Shim shim(pool_toml(2), upstream.base_url());
  ASSERT_TRUE(quota_post(shim));

  std::optional<util::Json> status = util::parse_json(quota_get(shim, "/status"));
  ASSERT_TRUE(status);
  const util::Json& keys = *status->find("pools")->items().at(0).find("keys");
  const util::Json* quota = keys.items().at(0).find("quota");
  ASSERT_TRUE(quota && quota->is_object());
  const util::Json& requests = *quota->find("requests");
  EXPECT_EQ(requests.find("limit")->as_unsigned(), 500u);
  EXPECT_EQ(requests.find("remaining")->as_unsigned(), 499u);
  EXPECT_GT(requests.find("resets_in_ms")->as_number(), 15000);
  EXPECT_TRUE(requests.string_at("reset"));
  EXPECT_EQ(quota->find("tokens")->find("remaining")->as_unsigned(), 29000u);
  EXPECT_TRUE(keys.items().at(1).find("quota")->is_null()) << "k1 answered nothing yet";

  std::string metrics = quota_get(shim, "/metrics");
  EXPECT_NE(
      metrics.find("\nkeyshim_key_quota_remaining{pool=\"default\",key=\"k0\",kind=\"requests\"} 499\n"),
      std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("\nkeyshim_key_quota_limit{pool=\"default\",key=\"k0\",kind=\"tokens\"} 30000\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("keyshim_key_quota_reset_seconds{pool=\"default\",key=\"k0\",kind=\"requests\"} "),
            std::string::npos);
  EXPECT_EQ(metrics.find("key=\"k1\",kind="), std::string::npos);
}

TEST(Quota, HostileFiguresAreIgnoredAndTheKeyKeepsServing) {
  FakeUpstream upstream;
  upstream.push(quota_ok({{"x-ratelimit-remaining-requests", "-1"},
                          {"x-ratelimit-reset-requests", "9999999999999999999999999"},
                          {"x-ratelimit-remaining-tokens", std::string(5000, '9')},
                          {"anthropic-ratelimit-requests-reset", "9999-12-31T23:59:59Z"},
                          {"anthropic-ratelimit-unified-status", std::string(3000, 'r')},
                          {"anthropic-ratelimit-unified-5h-utilization", "1e308"}}));
  Shim shim(pool_toml(2), upstream.base_url());
  ASSERT_TRUE(quota_post(shim));
  ASSERT_TRUE(quota_post(shim));
  EXPECT_EQ(quota_keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(0)}));
  EXPECT_FALSE(quota_health(shim, 0).quota);
}

} // namespace
} // namespace keyshim::test
