// Which pool serves a request target, and what is forwarded there.
#include "relay/pool_state.hpp"

#include "config/loader.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

const char* k_default_and_two = R"([[keys]]
key = "sk-route-default-0001"

[pools.anthropic]
base_url = "https://api.anthropic.com"
auth = "x-api-key"
[[pools.anthropic.keys]]
key = "sk-ant-route-0002"

[pools.gemini]
base_url = "https://generativelanguage.googleapis.com"
auth = "query:key"
[[pools.gemini.keys]]
key = "AIza-route-0003"
)";

const char* k_named_only = R"([pools.openai]
[[pools.openai.keys]]
key = "sk-route-openai-0004"
)";

class PoolStateTest : public ::testing::Test {
protected:
  PoolState state_of(const char* text) {
    config::LoadResult loaded = config::load_pool_text(text, "keys.toml");
    EXPECT_TRUE(loaded.ok()) << loaded.problems_text();
    auto config = std::make_shared<const config::Config>(std::move(*loaded.config));
    std::vector<std::shared_ptr<pool::KeyPool>> pools;
    for (const config::PoolConfig& pool : config->pools) {
      pools.push_back(std::make_shared<pool::KeyPool>(pool.keys, pool.upstream.strategy, m_clock));
    }
    return PoolState::serving(config, std::move(pools));
  }
  // "name target" of the route, or "none".
  std::string route(const PoolState& state, std::string_view target) {
    std::optional<Route> found = state.route(target);
    return found ? state.pools.at(found->pool).config->name + " " + found->target : "none";
  }

  test::FakeClock m_clock;
};

TEST_F(PoolStateTest, ANamedPrefixGoesToItsPoolWithThePrefixRemoved) {
  PoolState state = state_of(k_default_and_two);
  EXPECT_EQ(route(state, "/anthropic/v1/messages"), "anthropic /v1/messages");
  EXPECT_EQ(route(state, "/gemini/v1beta/models/x:streamGenerateContent?alt=sse"),
            "gemini /v1beta/models/x:streamGenerateContent?alt=sse");
}

TEST_F(PoolStateTest, ThePoolNameAloneIsTheRootOfItsUpstream) {
  PoolState state = state_of(k_default_and_two);
  EXPECT_EQ(route(state, "/anthropic"), "anthropic /");
  EXPECT_EQ(route(state, "/anthropic/"), "anthropic /");
  EXPECT_EQ(route(state, "/anthropic?beta=1"), "anthropic /?beta=1");
}

TEST_F(PoolStateTest, EverythingElseGoesToTheDefaultPoolUnchanged) {
  PoolState state = state_of(k_default_and_two);
  EXPECT_EQ(route(state, "/v1/chat/completions"), "default /v1/chat/completions");
  EXPECT_EQ(route(state, "/anthropicx/v1/messages"), "default /anthropicx/v1/messages"); // whole segment only
  EXPECT_EQ(route(state, "/Anthropic/v1/messages"), "default /Anthropic/v1/messages");   // case matters
  EXPECT_EQ(route(state, "/anthrop%69c/v1"), "default /anthrop%69c/v1");                 // not decoded
  EXPECT_EQ(route(state, "/"), "default /");
  EXPECT_EQ(route(state, "/v1/anthropic/x"), "default /v1/anthropic/x");
}

TEST_F(PoolStateTest, WithoutADefaultPoolAnUnownedPathHasNoRoute) {
  PoolState state = state_of(k_named_only);
  EXPECT_EQ(route(state, "/openai/v1/models"), "openai /v1/models");
  EXPECT_EQ(route(state, "/v1/models"), "none");
  EXPECT_EQ(route(state, "/"), "none");
}

TEST_F(PoolStateTest, ServesIsWhetherARouteExists) {
  for (const char* text : {k_default_and_two, k_named_only}) {
    PoolState state = state_of(text);
    for (std::string_view target : {"/openai/v1/models", "/openai", "/openai?x=1", "/v1/models", "/",
                                    "/anthropic/v1", "/anthropicx", "?", "/openai/"}) {
      EXPECT_EQ(state.serves(target), state.route(target).has_value()) << target;
    }
  }
}

TEST_F(PoolStateTest, RedactionCoversTheKeysOfEveryPool) {
  PoolState state = state_of(k_default_and_two);
  std::string text = state.redactor->apply("a sk-route-default-0001 b sk-ant-route-0002 c AIza-route-0003");
  EXPECT_EQ(text.find("sk-route-default-0001"), std::string::npos) << text;
  EXPECT_EQ(text.find("sk-ant-route-0002"), std::string::npos) << text;
  EXPECT_EQ(text.find("AIza-route-0003"), std::string::npos) << text;
}

TEST_F(PoolStateTest, QueryAuthParametersBelongToTheirPool) {
  PoolState state = state_of(k_default_and_two);
  EXPECT_TRUE(state.pools.at(0).query_auth_params.empty()); // the default pool uses bearer
  EXPECT_TRUE(state.pools.at(1).query_auth_params.empty());
  EXPECT_EQ(state.pools.at(2).query_auth_params, std::vector<std::string>{"key"});
}

TEST_F(PoolStateTest, AServingStateCarriesTheTlsContextsItsHttpsKeysNeed) {
  // Built with the state (at load, or on the reloader's thread), never by
  // the first request: one for the system store, which all three pools use.
  PoolState state = state_of(k_default_and_two);
  ASSERT_TRUE(state.tls);
  EXPECT_EQ(state.tls->size(), 1u);
  const TlsContexts::Entry* system = state.tls->find(std::nullopt);
  ASSERT_TRUE(system);
  EXPECT_TRUE(system->context) << system->error;
}

} // namespace
} // namespace keyshim::relay
