// The STATUS= line systemd shows for keyshim: counts across pools, which
// pool cannot serve, and never a key.
#include "server/status_line.hpp"

#include "support/fake_clock.hpp"
#include "support/pool_reports.hpp"
#include "support/serving_state.hpp"

#include <gtest/gtest.h>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

relay::PoolState serving(const std::string& toml, util::Clock& clock) {
  return test::serving_state(toml, clock);
}

// A 429 without a usable hint, cooling the key for 30 s.
pool::Report cooling_429() {
  return test::cool(429, 30s, true, "429");
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
  state.pools[0].keys->report(1, nullptr, test::disable(401, "401"));
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
