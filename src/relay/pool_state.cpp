#include "relay/pool_state.hpp"

#include "relay/upstream_conn.hpp"

#include <algorithm>

namespace keyshim::relay {

// The first path segment names the pool; it is compared as written (no
// percent-decoding), like nginx compares location prefixes.
std::optional<PoolState::Named> PoolState::named_pool(std::string_view target) const {
  if (target.size() <= 1 || target.front() != '/') {
    return std::nullopt;
  }
  std::size_t end = 1; // a loop, not find_first_of("/?"): that calls memchr once per byte
  while (end < target.size() && target[end] != '/' && target[end] != '?') {
    ++end;
  }
  std::string_view name = target.substr(1, end - 1);
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const config::PoolConfig& pool = *pools[i].config;
    if (!pool.is_default() && pool.name == name) {
      return Named{i, target.substr(end)};
    }
  }
  return std::nullopt;
}

std::optional<Route> PoolState::route(std::string_view target) const {
  if (std::optional<Named> named = named_pool(target)) {
    std::string_view rest = named->rest;
    return Route{named->pool,
                 rest.empty() || rest.front() == '?' ? "/" + std::string(rest) : std::string(rest)};
  }
  if (default_pool) {
    return Route{*default_pool, std::string(target)};
  }
  return std::nullopt;
}

PoolState PoolState::serving(std::shared_ptr<const config::Config> config,
                             std::vector<std::shared_ptr<pool::KeyPool>> pools) {
  PoolState state;
  std::vector<const pool::KeyPool*> all;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    ServedPool served;
    served.config = &config->pools.at(i);
    for (std::size_t k = 0; k < pools[i]->size(); ++k) {
      served.origins.push_back(UpstreamPool::origin_of(pools[i]->key(k)));
      const config::Auth& auth = pools[i]->key(k).auth;
      std::vector<std::string>& params = served.query_auth_params;
      if (auth.style == config::AuthStyle::query &&
          std::find(params.begin(), params.end(), auth.query_param) == params.end()) {
        params.push_back(auth.query_param);
      }
    }
    if (served.config->is_default()) {
      state.default_pool = i;
    }
    all.push_back(pools[i].get());
    served.keys = std::move(pools[i]);
    state.pools.push_back(std::move(served));
  }
  state.redactor = std::make_shared<const Redactor>(all);
  state.tls = TlsContexts::build(*config);
  state.config = std::move(config);
  return state;
}

PoolState PoolState::unusable(std::string problem) {
  PoolState state;
  state.problem = std::move(problem);
  return state;
}

} // namespace keyshim::relay
