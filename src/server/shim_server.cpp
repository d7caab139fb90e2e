#include "server/shim_server.hpp"

#include "config/loader.hpp"
#include "relay/beast.hpp"
#include "relay/exchange.hpp"
#include "relay/request_log.hpp"
#include "relay/socket_read.hpp"
#include "server/connection.hpp"
#include "server/connection_context.hpp"
#include "server/own_endpoints.hpp"
#include "server/status_line.hpp"
#include "util/log.hpp"
#include "util/recycling_allocator.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <ctime>
#include <deque>

namespace keyshim::server {
namespace {

namespace asio = relay::asio;
using relay::ErrorCode;

constexpr int k_listen_backlog = 4096;
// How often the STATUS= line is recomputed for the service manager. A timer
// rather than a hook in the request path: key health changes there, many
// times a second under load, and cooldowns also end without any request.
constexpr std::chrono::seconds k_status_interval{1};

// One listening socket, with the timer that paces accept retries on it.
struct Listener {
  explicit Listener(const relay::Executor& executor) : acceptor(executor), retry(executor) {}
  relay::Acceptor acceptor;
  relay::Timer retry;
};

} // namespace

// The server's event loop side: the io_context and everything bound to it.
// Its members are used on the loop's thread only (bind and adopt run
// before serve does).
class ShimServer::Impl {
public:
  explicit Impl(ShimServer& server)
      : m_server(server), m_status_timer(m_ioc.get_executor()), m_upstreams(m_ioc.get_executor()),
        m_attempts(m_upstreams, util::steady_clock()),
        m_relay{m_attempts, util::steady_clock(), util::system_clock(), m_alarms,
                m_waits,    server.m_published,   server.m_tokens,      m_captures},
        m_own(server.m_options.config_path, server.m_published, server.m_listen, m_waits, m_captures),
        m_connection_context{
            server.m_options.limits, server.m_head_limits, server.m_published, m_own, m_relay,
            server.m_registry} {}

  void accept(Listener& listener);
  void on_accept(Listener& listener, const ErrorCode& ec, relay::Socket socket);
  void watch_status();
  void drain_now();

  ShimServer& m_server;
  // Every socket and timer is used on this loop's thread only (the other
  // threads post to it), so the reactor skips its per-socket mutex: two
  // lock/unlock pairs per operation, 1.6 % of a proxied request's
  // instructions. The scheduler keeps its lock for those posts.
  asio::io_context m_ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  relay::LoopAlarms m_alarms{m_ioc.get_executor()};
  std::deque<Listener> m_listeners; // a deque: handlers hold references
  relay::Timer m_status_timer;
  relay::UpstreamPool m_upstreams;
  relay::PooledAttempts m_attempts;
  relay::WaitRoom m_waits;
  relay::CaptureRing m_captures; // the newest exchanges, filled by the relay, read by /captures
  relay::RelayContext m_relay;
  OwnEndpoints m_own;
  ConnectionContext m_connection_context; // what every Connection is given
  bool m_draining = false;
};

// The time zone is read here, before any of the server's threads: glibc
// reads it on the first local-time call under a lock ThreadSanitizer cannot
// see, and mktime rereads it, so a first read racing another thread's is
// reported (keyshim run logs from its main thread while this one serves).
ShimServer::ShimServer(ServeOptions options)
    : m_options(std::move(options)), m_tokens(m_published, [this] { tokens_changed(); }),
      m_impl(std::make_unique<Impl>(*this)) {
  ::tzset();
}

ShimServer::~ShimServer() {
  m_tokens.stop();
}

// A key_cmd run changed a key's token or health (on the refresher's
// thread): the requests waiting for a key look again, on the loop.
void ShimServer::tokens_changed() {
  asio::post(m_impl->m_ioc, [this] { m_impl->m_waits.wake_all(); });
}

relay::PoolState ShimServer::load_state(const relay::PoolState* previous) const {
  config::LoadResult loaded = m_options.config_text
                                  ? config::load_pool_text(*m_options.config_text, m_options.config_path)
                                  : config::load_pool_file(m_options.config_path);
  if (!loaded.ok()) {
    return relay::PoolState::unusable(
        fmt::format("keyshim cannot use its pool file: {}", loaded.problems_text()));
  }
  auto config = std::make_shared<const config::Config>(std::move(*loaded.config));
  // A key keeps its health across a reload when its pool and fingerprint
  // are unchanged: pools are matched by name.
  std::vector<std::shared_ptr<pool::KeyPool>> pools;
  for (const config::PoolConfig& pool : config->pools) {
    const relay::ServedPool* before = nullptr;
    for (std::size_t i = 0; previous && i < previous->pools.size(); ++i) {
      if (previous->pools[i].config->name == pool.name) {
        before = &previous->pools[i];
      }
    }
    pools.push_back(
        before ? pool::KeyPool::reloaded(*before->keys, pool.keys, pool.upstream.strategy)
               : std::make_shared<pool::KeyPool>(pool.keys, pool.upstream.strategy, util::system_clock()));
    pools.back()->set_session_ttl(pool.upstream.session_ttl);
  }
  return relay::PoolState::serving(std::move(config), std::move(pools));
}

void ShimServer::load() {
  auto state = std::make_shared<relay::PoolState>(load_state(nullptr));
  if (state->config) {
    m_listen = state->config->server.listen;
    log_key_table(*state->config);
  } else {
    util::log_error("{}", state->problem);
    util::log_error("every forwarded request will be answered 503 until the file is fixed and "
                    "`keyshim reload` is run");
  }
  if (m_options.listen) {
    m_listen = *m_options.listen;
  }
  m_published.publish(std::move(state));
  m_tokens.watch();
}

config::ListenAddress ShimServer::listen_address() const {
  return m_listen;
}

bool ShimServer::bind(std::string& error) {
  if (!config::is_loopback_host(m_listen.host)) {
    error = fmt::format("refusing to listen on {}: keyshim holds API keys and only listens on loopback "
                        "(127.0.0.0/8, [::1], localhost)",
                        m_listen.text());
    return false;
  }
  ErrorCode ec;
  std::string host = m_listen.host == "localhost" ? "127.0.0.1" : m_listen.host;
  relay::tcp::endpoint endpoint(asio::ip::make_address(host, ec), static_cast<unsigned short>(m_listen.port));
  relay::Acceptor& acceptor = m_impl->m_listeners.emplace_back(m_impl->m_ioc.get_executor()).acceptor;
  if (!ec) {
    acceptor.open(endpoint.protocol(), ec);
  }
  if (!ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(k_listen_backlog, ec);
  }
  if (ec) {
    error = fmt::format("cannot listen on {}: {} (is another keyshim running? try `keyshim status`)",
                        m_listen.text(), ec.message());
    m_impl->m_listeners.pop_back();
    return false;
  }
  relay::enable_read_hints(acceptor.native_handle()); // its connections inherit it
  m_port = acceptor.local_endpoint().port();
  m_listen.port = m_port;
  return true;
}

void ShimServer::adopt(const InheritedSockets& inherited) {
  for (const InheritedSocket& socket : inherited.sockets) {
    Listener& listener = m_impl->m_listeners.emplace_back(m_impl->m_ioc.get_executor());
    listener.acceptor.assign(socket.ipv6 ? relay::tcp::v6() : relay::tcp::v4(), socket.fd);
    relay::enable_read_hints(socket.fd);
  }
  if (!inherited.sockets.empty()) {
    m_socket_manager = inherited.manager;
    // The first socket stands for all of them in /status and the log.
    m_listen = inherited.sockets.front().address;
    m_port = m_listen.port;
  }
}

void ShimServer::serve() {
  for (Listener& listener : m_impl->m_listeners) {
    m_impl->accept(listener);
  }
  if (m_readiness.enabled()) {
    // Posted, so READY=1 goes out once the loop runs and accepts.
    asio::post(m_impl->m_ioc, [this] {
      m_readiness.ready(status_line(*state()));
      m_impl->watch_status();
    });
  }
  m_impl->m_ioc.run();
}

void ShimServer::Impl::watch_status() {
  m_status_timer.expires_after(k_status_interval);
  m_status_timer.async_wait([this](const ErrorCode& ec) {
    if (ec || m_draining) {
      return;
    }
    m_server.m_readiness.status(status_line(*m_server.state()));
    watch_status();
  });
}

void ShimServer::Impl::accept(Listener& listener) {
  listener.acceptor.async_accept([this, &listener](const ErrorCode& ec, relay::Socket socket) {
    on_accept(listener, ec, std::move(socket));
  });
}

void ShimServer::Impl::on_accept(Listener& listener, const ErrorCode& ec, relay::Socket socket) {
  if (m_draining || !listener.acceptor.is_open()) {
    return;
  }
  if (ec) {
    // Out of descriptors (EMFILE) and the like: pause instead of spinning.
    util::log_warn("accept failed: {}; retrying in 100ms", ec.message());
    listener.retry.expires_after(std::chrono::milliseconds(100));
    listener.retry.async_wait([this, &listener](const ErrorCode& e) {
      if (!e && !m_draining) {
        accept(listener);
      }
    });
    return;
  }
  // The socket was registered with the loop a moment ago, in this handler's
  // completion: a request already there is reported by the next poll, so
  // its first read waits for that instead of trying a recv (nginx does the
  // same; relay/socket_read.hpp).
  relay::mark_emptied(socket);
  // A connection's block is kept for the next one, like an exchange's.
  std::allocate_shared<Connection>(util::RecyclingAllocator<Connection>(), std::move(socket),
                                   m_connection_context)
      ->start();
  accept(listener);
}

bool ShimServer::reload() {
  m_readiness.reloading();
  std::shared_ptr<const relay::PoolState> current = m_published.current();
  auto next = std::make_shared<relay::PoolState>(load_state(current.get()));
  if (!next->config) {
    util::log_error("reload rejected, keeping the current pool: {}", next->problem);
    m_readiness.ready(status_line(*current));
    return false;
  }
  if (next->config->server.listen != m_listen && !m_options.listen) {
    if (m_socket_manager.empty()) {
      util::log_warn("reload: listen changed to {} but keyshim stays on {} until restarted",
                     next->config->server.listen.text(), m_listen.text());
    } else {
      util::log_warn("reload: listen changed to {} but keyshim serves the socket from {} on {}; run "
                     "`keyshim service install` again to move it",
                     next->config->server.listen.text(), m_socket_manager, m_listen.text());
    }
  }
  // Publish first: "reloaded" must mean that the next request sees the new pool.
  m_published.publish(next);
  m_tokens.watch();
  // Then the requests waiting for a key look again, in the new pools: a
  // raised limit or a new key serves them now, and they stay ahead of any
  // request that arrives after the reload (which wakes them first anyway).
  asio::post(m_impl->m_ioc, [this] { m_impl->m_waits.wake_all(); });
  util::log_info("reloaded {}: {} keys in {} pools", m_options.config_path, next->config->key_count(),
                 next->config->pools.size());
  log_key_table(*next->config);
  m_readiness.ready(status_line(*next));
  return true;
}

void ShimServer::begin_shutdown() {
  m_readiness.stopping();
  util::log_info("shutting down: no new connections; waiting up to {}s for {} in-flight requests",
                 std::chrono::duration_cast<std::chrono::seconds>(drain_timeout()).count(), in_flight());
  asio::post(m_impl->m_ioc, [this] { m_impl->drain_now(); });
}

void ShimServer::Impl::drain_now() {
  m_draining = true;
  ErrorCode ignored;
  for (Listener& listener : m_listeners) {
    listener.acceptor.close(ignored);
    listener.retry.cancel();
  }
  m_status_timer.cancel();
  m_upstreams.clear();
  m_waits.close_all(); // a request waiting for a key gets its 503 now, not at max_wait
  m_server.m_registry.drain_all();
}

void ShimServer::abort_in_flight() {
  asio::post(m_impl->m_ioc, [this] {
    m_impl->drain_now();
    m_registry.abort_all();
  });
}

std::chrono::milliseconds ShimServer::drain_timeout() const {
  auto current = m_published.current();
  return current->config ? current->config->server.drain_timeout : config::ServerSettings{}.drain_timeout;
}

void log_key_table(const config::Config& config) {
  for (const config::PoolConfig& pool : config.pools) {
    for (const config::KeyConfig& key : pool.keys) {
      util::log_info("key {} {} pool={} route={} {} auth={}{}", key.label, key.secret.fingerprint(),
                     pool.name, pool.route(), key.base_url.text(), key.auth.text(),
                     key.proxy ? " proxy=" + key.proxy->text() : std::string());
    }
  }
}

} // namespace keyshim::server
