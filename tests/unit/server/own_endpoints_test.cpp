// What keyshim answers itself, judged without a socket: the guards come
// first, /health and GET or HEAD on a pool's root need no token, /status and /metrics do, and a
// request nothing can serve is answered here instead of being relayed.
#include "server/own_endpoints.hpp"

#include "server/published_state.hpp"
#include "support/fake_clock.hpp"
#include "support/log_capture.hpp"
#include "support/serving_state.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace keyshim::server {
namespace {

namespace http = relay::http;

constexpr const char* k_token_pool = R"([server]
client_token = "own-endpoints-token"

[[keys]]
key = "sk-own-endpoints-0001"
)";

constexpr const char* k_named_pools_only = R"([pools.openai]
[[pools.openai.keys]]
key = "sk-own-endpoints-0002"
)";

class OwnEndpointsTest : public ::testing::Test {
protected:
  OwnEndpointsTest() { m_listen.port = 8787; }

  void serve(const std::string& toml) {
    m_published.publish(std::make_shared<relay::PoolState>(test::serving_state(toml, m_clock)));
  }

  // A request head as a tool sends it; tests add the fields they are about.
  static relay::RequestHead request_head(http::verb verb, const char* target,
                                         const char* host = "127.0.0.1:8787") {
    relay::RequestHead head;
    head.method(verb);
    head.target(target);
    head.version(11);
    head.set(http::field::host, host);
    return head;
  }
  std::optional<relay::Answer> ask(http::verb verb, const char* target, const char* host = "127.0.0.1:8787") {
    return ask(request_head(verb, target, host));
  }
  std::optional<relay::Answer> ask(const relay::RequestHead& head) {
    return m_own.answer(head, *m_published.current());
  }

  test::FakeClock m_clock;
  test::FakeMonoClock m_mono;
  PublishedState m_published;
  config::ListenAddress m_listen;
  relay::WaitRoom m_waits{m_mono};
  relay::CaptureRing m_captures;
  OwnEndpoints m_own{"/etc/keyshim/keys.toml", m_published, m_listen, m_waits, m_captures};
};

// A request in the wait room that never gets a key.
struct StillWaiting : relay::Waiter {
  bool retry() override { return false; }
  void shutting_down() override {}
  relay::WaitRoom::Place place;
};

TEST_F(OwnEndpointsTest, RefusesANonLoopbackHostBeforeAnythingElse) {
  serve(k_token_pool);
  test::LogCapture log;
  std::optional<relay::Answer> answer = ask(http::verb::get, "/health", "evil.example");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 403);
  EXPECT_NE(answer->body.find("forbidden_host"), std::string::npos);
  EXPECT_TRUE(log.contains("Host \"evil.example\" is not a loopback name"));
}

TEST_F(OwnEndpointsTest, RefusesAnOriginNotAllowed) {
  serve(k_token_pool);
  relay::RequestHead head = request_head(http::verb::post, "/v1/chat/completions", "localhost");
  head.set(http::field::origin, "https://evil.example");
  std::optional<relay::Answer> answer = ask(head);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 403);
  EXPECT_NE(answer->body.find("forbidden_origin"), std::string::npos);
}

TEST_F(OwnEndpointsTest, HealthAndHeadSlashNeedNoToken) {
  serve(k_token_pool);
  std::optional<relay::Answer> health = ask(http::verb::get, "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_NE(health->body.find("\"status\":\"ok\""), std::string::npos);
  std::optional<relay::Answer> probe = ask(http::verb::head, "/");
  ASSERT_TRUE(probe);
  EXPECT_EQ(probe->status, 200);
  EXPECT_TRUE(probe->body.empty());
}

constexpr const char* k_default_and_named = R"([server]
client_token = "own-endpoints-token"

[[keys]]
key = "sk-own-endpoints-0003"

[pools.anthropic]
[[pools.anthropic.keys]]
key = "sk-own-endpoints-0004"
)";

TEST_F(OwnEndpointsTest, GetAndHeadOnAnyPoolsRootAreAnsweredWithoutKeyOrToken) {
  serve(k_default_and_named);
  for (http::verb verb : {http::verb::head, http::verb::get}) {
    for (const char* target :
         {"/", "/?x=1", "/anthropic", "/anthropic/", "/anthropic?beta=true", "/anthropic/?beta=true"}) {
      std::optional<relay::Answer> probe = ask(verb, target);
      ASSERT_TRUE(probe) << target;
      EXPECT_EQ(probe->status, 200) << target;
      EXPECT_TRUE(probe->body.empty()) << target;
    }
  }
}

TEST_F(OwnEndpointsTest, OnlyGetAndHeadOnTheExactRootAreAnsweredLocally) {
  serve(k_default_and_named);
  relay::RequestHead post = request_head(http::verb::post, "/anthropic");
  post.set(http::field::authorization, "Bearer own-endpoints-token");
  EXPECT_FALSE(ask(post)) << "POST /anthropic is relayed";
  for (const char* target : {"/anthropic/v1/messages", "/anthropic//", "/anthropicx", "/unknown"}) {
    relay::RequestHead get = request_head(http::verb::get, target);
    get.set(http::field::authorization, "Bearer own-endpoints-token");
    EXPECT_FALSE(ask(get)) << target << " is relayed";
  }
}

TEST_F(OwnEndpointsTest, ARootOfNoPoolIsNotAProbeWithoutADefaultPool) {
  serve(k_named_pools_only);
  std::optional<relay::Answer> root = ask(http::verb::head, "/openai");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  std::optional<relay::Answer> unknown = ask(http::verb::head, "/anthropic");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404) << "no pool at /anthropic";
}

TEST_F(OwnEndpointsTest, StatusAndRelayedPathsNeedTheToken) {
  serve(k_token_pool);
  std::optional<relay::Answer> status = ask(http::verb::get, "/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 401);
  EXPECT_NE(status->body.find("invalid_client_token"), std::string::npos);

  relay::RequestHead head = request_head(http::verb::get, "/status", "127.0.0.1");
  head.set(http::field::authorization, "Bearer own-endpoints-token");
  std::optional<relay::Answer> allowed = ask(head);
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  EXPECT_NE(allowed->body.find("\"generation\":1"), std::string::npos) << allowed->body;
  EXPECT_NE(allowed->body.find("\"listen\":\"127.0.0.1:8787\""), std::string::npos) << allowed->body;
  EXPECT_NE(allowed->body.find("/etc/keyshim/keys.toml"), std::string::npos) << allowed->body;

  head.target("/v1/models");
  EXPECT_FALSE(ask(head)) << "a request with the token is relayed";
}

// keyshim top shows each pool's queue: how many wait for a key, and for how
// long the first of them has.
TEST_F(OwnEndpointsTest, StatusReportsEachPoolsWaitersAndTheOldestWait) {
  serve(k_named_pools_only);
  auto first = std::make_shared<StillWaiting>();
  auto second = std::make_shared<StillWaiting>();
  first->place.pool = second->place.pool = "openai";
  second->place.lane = "gpt-4o";
  m_waits.enter(first->place, first);
  m_mono.advance(std::chrono::milliseconds(1500));
  m_waits.enter(second->place, second);
  m_mono.advance(std::chrono::milliseconds(1000));

  std::optional<relay::Answer> status = ask(http::verb::get, "/status");
  ASSERT_TRUE(status);
  std::optional<util::Json> json = util::parse_json(status->body);
  ASSERT_TRUE(json) << status->body;
  const util::Json& pool = json->find("pools")->items().at(0);
  EXPECT_EQ(pool.string_at("name"), "openai");
  EXPECT_EQ(pool.find("waiting")->as_number(), 2);
  EXPECT_EQ(pool.find("oldest_wait_ms")->as_number(), 2500);

  m_waits.leave(first->place);
  m_waits.leave(second->place);
  json = util::parse_json(ask(http::verb::get, "/status")->body);
  ASSERT_TRUE(json);
  EXPECT_EQ(json->find("pools")->items().at(0).find("waiting")->as_number(), 0);
  EXPECT_EQ(json->find("pools")->items().at(0).find("oldest_wait_ms")->as_number(), 0);
}

TEST_F(OwnEndpointsTest, MetricsAreAnsweredInPrometheusText) {
  serve(k_named_pools_only);
  std::optional<relay::Answer> metrics = ask(http::verb::get, "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  ASSERT_EQ(metrics->headers.size(), 1u);
  EXPECT_EQ(metrics->headers[0].first, "Content-Type");
  EXPECT_NE(metrics->body.find("keyshim_"), std::string::npos);
}

TEST_F(OwnEndpointsTest, APathNoPoolServesIsAnswered404NamingTheRoutes) {
  serve(k_named_pools_only);
  test::LogCapture log;
  std::optional<relay::Answer> answer = ask(http::verb::post, "/v1/chat/completions?x=1");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 404);
  EXPECT_NE(
      answer->body.find("keyshim: no pool serves /v1/chat/completions; this keyshim's pools are at /openai/"),
      std::string::npos)
      << answer->body;
  EXPECT_TRUE(log.contains("no pool serves this path"));
  EXPECT_FALSE(ask(http::verb::post, "/openai/v1/chat/completions")) << "a routed path is relayed";
}

TEST_F(OwnEndpointsTest, AnUnusablePoolFileIsAnswered503WithItsReason) {
  m_published.publish(std::make_shared<relay::PoolState>(
      relay::PoolState::unusable("keyshim cannot use its pool file: keys.toml:1:1: broken")));
  std::optional<relay::Answer> answer = ask(http::verb::post, "/v1/chat/completions");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 503);
  EXPECT_NE(answer->body.find("keys.toml:1:1: broken"), std::string::npos) << answer->body;
  EXPECT_NE(answer->body.find("pool_file_unusable"), std::string::npos);
  std::optional<relay::Answer> health = ask(http::verb::get, "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503) << "no pool has a key to serve with";
}

} // namespace
} // namespace keyshim::server
