#include "relay/pool_state.hpp"

#include <algorithm>

namespace keyshim::relay {

PoolState PoolState::serving(std::shared_ptr<const config::Config> config,
                             std::shared_ptr<pool::KeyPool> pool) {
  PoolState state;
  state.redactor = std::make_shared<const Redactor>(*pool);
  for (std::size_t i = 0; i < pool->size(); ++i) {
    const config::Auth& auth = pool->key(i).auth;
    if (auth.style == config::AuthStyle::query &&
        std::find(state.query_auth_params.begin(), state.query_auth_params.end(), auth.query_param) ==
            state.query_auth_params.end()) {
      state.query_auth_params.push_back(auth.query_param);
    }
  }
  state.config = std::move(config);
  state.pool = std::move(pool);
  return state;
}

PoolState PoolState::unusable(std::string problem) {
  PoolState state;
  state.problem = std::move(problem);
  return state;
}

} // namespace keyshim::relay
