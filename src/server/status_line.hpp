#pragma once
// The one-line state of the pools that the service manager shows
// (`systemctl --user status keyshim`: "Status: ...").
#include "relay/pool_state.hpp"

#include <string>

namespace keyshim::server {

// "3 keys: 2 available, 1 cooling"; with several pools "5 keys in 2 pools:
// 4 available, 1 cooling; none available in anthropic"; or why the pool
// file is unusable. Labels and keys never appear.
std::string status_line(const relay::PoolState& state);

} // namespace keyshim::server
