#pragma once
// Everything a client connection uses of the server that accepted it, and
// nothing more: its limits, the pool state to serve each request from,
// keyshim's own endpoints, what relayed requests share, and the registry
// that counts requests in flight and finds connections at shutdown. The
// server owns all of it and outlives its connections. Event-loop thread.
#include "server/limits.hpp"

namespace keyshim::relay {
struct RelayContext;
}

namespace keyshim::server {

class ConnectionRegistry;
class OwnEndpoints;
class PublishedState;

struct ConnectionContext {
  const ConnectionLimits& limits;
  const HeadLimits& head_limits;
  const PublishedState& state; // current() when a request head is complete
  const OwnEndpoints& own;
  relay::RelayContext& relay;
  ConnectionRegistry& registry;
};

} // namespace keyshim::server
