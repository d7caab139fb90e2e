#pragma once
// The CONNECT step of an upstream connection through an HTTP proxy: ask the
// proxy for a tunnel to the upstream and read its answer. What follows (the
// TLS handshake, the request) runs through the tunnel as on a direct socket.
#include "config/proxy.hpp"
#include "relay/beast.hpp"

#include <cstddef>
#include <functional>
#include <string>

namespace keyshim::relay {

// The longest CONNECT reply head accepted; a longer one fails the connection.
constexpr std::size_t k_max_proxy_reply = 16 * 1024;

// "CONNECT host:port HTTP/1.1", Host and, when the proxy URL has
// credentials, Proxy-Authorization. Holds the credentials: wipe it after use.
std::string connect_request(const config::ProxyUrl& proxy, const std::string& host, int port);

// Called once: "" when the tunnel is open, else why not, naming the proxy by
// host:port only (no credentials, no key), e.g.
// "proxy 127.0.0.1:8888 refused CONNECT: 403 Forbidden".
using TunnelDone = std::function<void(const std::string& failure)>;

// On `socket`, freshly connected to `proxy`: send CONNECT for host:port, read
// the reply head (at most k_max_proxy_reply bytes) and require a 2xx with
// nothing after it. `socket` must outlive the operation; closing it aborts
// the operation, which then reports a failure. Event-loop thread only.
void open_tunnel(Socket& socket, const config::ProxyUrl& proxy, const std::string& host, int port,
                 TunnelDone done);

} // namespace keyshim::relay
