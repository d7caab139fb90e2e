#pragma once
// A relay::PoolState serving the pool file `toml`, its KeyPools on `clock`:
// what a server publishes after a load, for tests that read it.
#include "config/loader.hpp"
#include "relay/pool_state.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace keyshim::test {

inline relay::PoolState serving_state(const std::string& toml, util::Clock& clock) {
  config::LoadResult loaded = config::load_pool_text(toml, "keys.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.problems_text();
  auto config = std::make_shared<const config::Config>(std::move(*loaded.config));
  std::vector<std::shared_ptr<pool::KeyPool>> pools;
  for (const config::PoolConfig& pool : config->pools) {
    pools.push_back(std::make_shared<pool::KeyPool>(pool.keys, pool.upstream.strategy, clock));
  }
  return relay::PoolState::serving(std::move(config), std::move(pools));
}

} // namespace keyshim::test
