#pragma once
// keyshim's HTTP front: the loopback listener, the request guards, its own
// endpoints, the relay for everything else, and the pool state that SIGHUP
// replaces. Thread-safe: requests, reload and shutdown run concurrently.
#include "config/config.hpp"
#include "relay/pool_state.hpp"
#include "relay/relay.hpp"
#include "server/loopback_server.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace keyshim::server {

struct ServeOptions {
  std::string config_path;
  std::optional<config::ListenAddress> listen; // --listen; else the file's, else the default
  int worker_threads = 512;                    // one per open client connection
  ConnectionLimits limits;
  // When set, serve this text instead of reading config_path (the demo).
  std::optional<std::string> config_text;
};

class ShimServer {
public:
  explicit ShimServer(ServeOptions options);
  ~ShimServer();

  // Read the pool file. A file keyshim cannot use is logged loudly and every
  // forwarded request is answered 503 with the reason, until a reload fixes it.
  void load();
  // The address serve() will listen on.
  config::ListenAddress listen_address() const;
  // Bind the listening socket (port 0 picks a free one). False with `error`.
  bool bind(std::string& error);
  int port() const { return m_port; }
  // Accept and serve until shutdown() has drained. Blocks.
  void serve();

  // Re-read the pool file (SIGHUP). Keys whose fingerprint is unchanged keep
  // their health. A bad file is rejected and the current pool stays.
  bool reload();
  // Stop accepting; in-flight responses get until `drain_timeout`.
  void begin_shutdown();
  // The drain ran out of time: cut what is left.
  void abort_in_flight() { m_relay.abort_all(); }
  std::chrono::milliseconds drain_timeout() const;
  int in_flight() const { return m_relay.in_flight(); }

  std::shared_ptr<const relay::PoolState> state() const;

private:
  void publish(std::shared_ptr<const relay::PoolState> state);
  relay::PoolState load_state(const relay::PoolState* previous) const;
  void install_routes();
  httplib::Server::HandlerResponse guard_and_serve_own(const httplib::Request& req, httplib::Response& res);

  ServeOptions m_options;
  LoopbackServer m_http;
  relay::Relay m_relay;
  mutable std::mutex m_state_mutex;
  std::shared_ptr<const relay::PoolState> m_state;
  config::ListenAddress m_listen;
  int m_port = 0;
  std::atomic<int> m_generation{0}; // successful loads, shown in /status
};

// Log the key table: label, fingerprint, upstream.
void log_key_table(const config::Config& config);

} // namespace keyshim::server
