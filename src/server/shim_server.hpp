#pragma once
// keyshim's HTTP front: the loopback listener, the request guards, its own
// endpoints, the relay for everything else, and the pool state that SIGHUP
// replaces. One event loop on the thread that calls serve(); reload(),
// begin_shutdown() and abort_in_flight() may be called from any thread.
#include "config/config.hpp"
#include "relay/beast.hpp"
#include "relay/exchange.hpp"
#include "relay/pool_state.hpp"
#include "server/inherited_sockets.hpp"
#include "server/readiness.hpp"
#include "server/request_head.hpp"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace keyshim::server {

class Connection;

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
  int in_flight() const { return m_in_flight; }

  std::shared_ptr<const relay::PoolState> state() const;

  // ---- for connections, on the event loop's thread
  const ConnectionLimits& limits() const { return m_options.limits; }
  const HeadLimits& head_limits() const { return m_head_limits; }
  relay::RelayContext& relay_context() { return m_context; }
  // keyshim's own answer to this request (a refusal by the guards, /health,
  // /status, `HEAD /`, 503 while no pool file is usable), or nullopt to relay.
  std::optional<relay::Answer> answer_own(const relay::http::request_header<>& head,
                                          const relay::PoolState& state) const;
  void attach(Connection* connection) { m_connections.insert(connection); }
  void detach(Connection* connection) { m_connections.erase(connection); }
  void request_started() { ++m_in_flight; }
  void request_finished() { --m_in_flight; }

private:
  // One listening socket, with the timer that paces accept retries on it.
  struct Listener {
    explicit Listener(const relay::Executor& executor) : acceptor(executor), retry(executor) {}
    relay::Acceptor acceptor;
    relay::Timer retry;
  };

  void publish(std::shared_ptr<const relay::PoolState> state);
  relay::PoolState load_state(const relay::PoolState* previous) const;
  void accept(Listener& listener);
  void on_accept(Listener& listener, const relay::ErrorCode& ec, relay::Socket socket);
  void drain_now();
  void watch_status();

  ServeOptions m_options;
  HeadLimits m_head_limits;
  relay::asio::io_context m_ioc{1};
  std::deque<Listener> m_listeners; // a deque: handlers hold references
  relay::Timer m_status_timer;
  Readiness m_readiness;
  std::string m_socket_manager;

  relay::UpstreamPool m_upstreams;
  relay::WaitRoom m_waits;
  relay::RelayContext m_context;
  std::unordered_set<Connection*> m_connections;
  bool m_draining = false;

  mutable std::mutex m_state_mutex;
  std::shared_ptr<const relay::PoolState> m_state;
  config::ListenAddress m_listen;
  int m_port = 0;
  std::atomic<int> m_generation{0}; // successful loads, shown in /status
  std::atomic<int> m_in_flight{0};
};

// Log the key table: label, fingerprint, upstream.
void log_key_table(const config::Config& config);

} // namespace keyshim::server
