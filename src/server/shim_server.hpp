#pragma once
// keyshim's HTTP front: the loopback listener, the request guards, its own
// endpoints, the relay for everything else, and the pool state that SIGHUP
// replaces. One event loop on the thread that calls serve(); reload(),
// begin_shutdown() and abort_in_flight() may be called from any thread.
//
// The event loop, the listeners and the relay live in an Impl (pimpl), so
// that code which only starts, reloads or stops a server (the CLI, tests)
// does not compile Boost.Beast/Asio.
#include "config/config.hpp"
#include "relay/pool_state.hpp"
#include "server/connection_registry.hpp"
#include "server/inherited_sockets.hpp"
#include "server/limits.hpp"
#include "server/published_state.hpp"
#include "server/readiness.hpp"
#include "server/token_refresher.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace keyshim::server {

struct ServeOptions {
  std::string config_path;
  std::optional<config::ListenAddress> listen; // --listen; else the file's, else the default
  ConnectionLimits limits;
  // When set, serve this text instead of reading config_path (the demo).
  std::optional<std::string> config_text;
};

class ShimServer {
public:
  explicit ShimServer(ServeOptions options);
  ~ShimServer();
  ShimServer(const ShimServer&) = delete;
  ShimServer& operator=(const ShimServer&) = delete;

  // Read the pool file. A file keyshim cannot use is logged loudly and every
  // forwarded request is answered 503 with the reason, until a reload fixes it.
  void load();
  // The address serve() will listen on.
  config::ListenAddress listen_address() const;
  // Bind the listening socket (port 0 picks a free one). False with `error`.
  bool bind(std::string& error);
  // Serve the sockets a service manager passed instead of binding (checked
  // by take_inherited_sockets); the pool file's listen is then not bound.
  void adopt(const InheritedSockets& inherited);
  // "systemd"/"launchd" after adopt(), else "".
  const std::string& socket_manager() const { return m_socket_manager; }
  int port() const { return m_port; }
  // Accept and serve on this thread until shutdown has drained. Blocks.
  // Tells the service manager READY=1 once the loop runs, then keeps its
  // STATUS= line current (checked once a second, sent when it changed).
  void serve();

  // Re-read the pool file (SIGHUP). Runs on the caller's thread, never the
  // event loop's: key_cmd may take seconds. Keys whose fingerprint is
  // unchanged keep their health. A bad file is rejected and the pool stays.
  bool reload();
  // Stop accepting; idle connections close; in-flight responses continue.
  void begin_shutdown();
  // The drain ran out of time: cut what is left.
  void abort_in_flight();
  std::chrono::milliseconds drain_timeout() const;
  int in_flight() const { return m_registry.in_flight(); }

  std::shared_ptr<const relay::PoolState> state() const { return m_published.current(); }
  // The newest state, as a source that follows reloads (server/state_keeper.hpp).
  const relay::StateSource& published() const { return m_published; }

private:
  class Impl;

  relay::PoolState load_state(const relay::PoolState* previous) const;
  void tokens_changed();

  ServeOptions m_options;
  HeadLimits m_head_limits;
  PublishedState m_published;
  // Before m_impl, so that it outlives the event loop and the connections
  // its handlers may still hold when the loop is destroyed.
  ConnectionRegistry m_registry;
  // Before m_impl, whose relay context refers to it; stopped first thing in
  // the destructor, since it posts to the loop that m_impl owns.
  TokenRefresher m_tokens;
  Readiness m_readiness;
  std::string m_socket_manager;
  config::ListenAddress m_listen;
  int m_port = 0;
  std::unique_ptr<Impl> m_impl;
};

// Log the key table: label, fingerprint, upstream.
void log_key_table(const config::Config& config);

} // namespace keyshim::server
