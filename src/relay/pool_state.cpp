#include "relay/pool_state.hpp"

#include "relay/upstream_conn.hpp"

#include <algorithm>

namespace keyshim::relay {

std::optional<Route> PoolState::route(std::string_view target) const {
  // The first path segment names the pool; it is compared as written
  // (no percent-decoding), like nginx compares location prefixes.
  if (target.size() > 1 && target.front() == '/') {
    std::size_t end = target.find_first_of("/?", 1);
    std::string_view name = target.substr(1, end == std::string_view::npos ? end : end - 1);
    for (std::size_t i = 0; i < pools.size(); ++i) {
      const config::PoolConfig& pool = *pools[i].config;
      if (!pool.is_default() && pool.name == name) {
        std::string_view rest = end == std::string_view::npos ? std::string_view() : target.substr(end);
        return Route{i, rest.empty() || rest.front() == '?' ? "/" + std::string(rest) : std::string(rest)};
      }
    }
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
