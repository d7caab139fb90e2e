// The STATUS= line systemd shows for keyshim: counts across pools, which
// pool cannot serve, and never a key.
#include "server/status_line.hpp"

#include "config/loader.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

relay::PoolState serving(const std::string& toml, util::Clock& clock) {
  config::LoadResult loaded = config::load_pool_text(toml, "keys.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.problems_text();
  auto config = std::make_shared<const config::Config>(std::move(*loaded.config));
  std::vector<std::shared_ptr<pool::KeyPool>> pools;
  for (const config::PoolConfig& pool : config->pools) {
    pools.push_back(std::make_shared<pool::KeyPool>(pool.keys, pool.upstream.strategy, clock));
  }
  return relay::PoolState::serving(std::move(config), std::move(pools));
}

// A 429 without a usable hint, cooling the key for 30 s.
pool::Report cooling_429() {
  pool::Report report;
  report.change = pool::Change::cool;
  report.status = 429;
  report.cooldown = 30s;
  report.rate_limited = true;
  report.reason = "429";
  return report;
}

constexpr const char* k_one_pool = R"([[keys]]
key = "sk-status-line-0001"
[[keys]]
key = "sk-status-line-0002"
[[keys]]
key = "sk-status-line-0003"
)";

constexpr const char* k_two_pools = R"([pools.openai]
[[pools.openai.keys]]
key = "sk-status-line-0001"
[[pools.openai.keys]]
key = "sk-status-line-0002"

[pools.anthropic]
base_url = "https://api.anthropic.com"
auth = "x-api-key"
[[pools.anthropic.keys]]
key = "sk-status-line-0003"
)";

TEST(StatusLine, CountsKeysByStateAndLeavesOutStatesNoKeyIsIn) {
  test::FakeClock clock;
  relay::PoolState state = serving(k_one_pool, clock);
  EXPECT_EQ(status_line(state), "3 keys: 3 available");
  state.pools[0].keys->report(0, nullptr, cooling_429());
  EXPECT_EQ(status_line(state), "3 keys: 2 available, 1 cooling");
  pool::Report revoked;
  revoked.change = pool::Change::disable;
  revoked.status = 401;
  revoked.reason = "401";
  state.pools[0].keys->report(1, nullptr, revoked);
  EXPECT_EQ(status_line(state), "3 keys: 1 available, 1 cooling, 1 disabled");
}

TEST(StatusLine, SeveralPoolsAreSummedAndAPoolThatCannotServeIsNamed) {
  test::FakeClock clock;
  relay::PoolState state = serving(k_two_pools, clock);
  EXPECT_EQ(status_line(state), "3 keys in 2 pools: 3 available");
  for (const relay::ServedPool& served : state.pools) {
    if (served.config->name == "anthropic") {
      served.keys->report(0, nullptr, cooling_429());
    }
  }
  std::string line = status_line(state);
  EXPECT_EQ(line, "3 keys in 2 pools: 2 available, 1 cooling; none available in anthropic");
  EXPECT_EQ(line.find("sk-status-line"), std::string::npos);
}

TEST(StatusLine, AnUnusablePoolFileSaysWhyOnOneLine) {
  relay::PoolState state = relay::PoolState::unusable("keys.toml:3: bad\nmore detail");
  EXPECT_EQ(status_line(state), "serving 503s: keys.toml:3: bad");
}

} // namespace
} // namespace keyshim::server
