#include "server/shim_server.hpp"

#include "config/loader.hpp"
#include "relay/json_error.hpp"
#include "server/request_guard.hpp"
#include "server/status_json.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keyshim::server {
namespace {

void answer_json(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), "application/json");
}

void refuse(httplib::Response& res, int status, std::string_view message, std::string_view code) {
  answer_json(res, status, relay::json_error_body(message, "keyshim_refused", code));
}

} // namespace

ShimServer::ShimServer(ServeOptions options)
    : m_options(std::move(options)), m_http(m_options.limits), m_state(std::make_shared<relay::PoolState>()) {
  const int workers = m_options.worker_threads;
  // httplib holds one worker per open connection, idle keep-alive included,
  // and queues further connections silently: size the pool for many
  // concurrent streams (idle threads cost ~8 KB of RSS each).
  m_http.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<std::size_t>(workers)); };
  install_routes();
}

ShimServer::~ShimServer() = default;

relay::PoolState ShimServer::load_state(const relay::PoolState* previous) const {
  config::LoadResult loaded = m_options.config_text
                                  ? config::load_pool_text(*m_options.config_text, m_options.config_path)
                                  : config::load_pool_file(m_options.config_path);
  relay::PoolState state;
  if (!loaded.ok()) {
    state.problem = fmt::format("keyshim cannot use its pool file: {}", loaded.problems_text());
    return state;
  }
  auto config = std::make_shared<const config::Config>(std::move(*loaded.config));
  state.pool =
      previous && previous->pool
          ? pool::KeyPool::reloaded(*previous->pool, config->keys, config->upstream.strategy)
          : std::make_shared<pool::KeyPool>(config->keys, config->upstream.strategy, util::system_clock());
  state.config = std::move(config);
  return state;
}

void ShimServer::publish(std::shared_ptr<const relay::PoolState> state) {
  HeadLimits limits;
  if (state->config) {
    limits.max_body_bytes = state->config->server.max_request_body;
    m_http.set_payload_max_length(static_cast<std::size_t>(limits.max_body_bytes));
  }
  m_http.set_head_limits(limits);
  if (state->config) {
    ++m_generation;
  }
  std::lock_guard lock(m_state_mutex);
  m_state = std::move(state);
}

std::shared_ptr<const relay::PoolState> ShimServer::state() const {
  std::lock_guard lock(m_state_mutex);
  return m_state;
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
  publish(std::move(state));
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
  if (m_listen.port == 0) {
    m_port = m_http.bind_to_any_port(m_listen.host);
  } else {
    m_port = m_http.bind_to_port(m_listen.host, m_listen.port) ? m_listen.port : -1;
  }
  if (m_port <= 0) {
    error = fmt::format("cannot listen on {}: {} (is another keyshim running? try `keyshim status`)",
                        m_listen.text(), std::strerror(errno));
    return false;
  }
  m_http.widen_backlog(1024);
  m_listen.port = m_port;
  return true;
}

void ShimServer::serve() {
  m_http.listen_after_bind();
}

bool ShimServer::reload() {
  std::shared_ptr<const relay::PoolState> current = state();
  auto next = std::make_shared<relay::PoolState>(load_state(current.get()));
  if (!next->config) {
    util::log_error("reload rejected, keeping the current pool: {}", next->problem);
    return false;
  }
  if (next->config->server.listen != m_listen && !m_options.listen) {
    util::log_warn("reload: listen changed to {} but keyshim stays on {} until restarted",
                   next->config->server.listen.text(), m_listen.text());
  }
  util::log_info("reloaded {}: {} keys", m_options.config_path, next->config->keys.size());
  log_key_table(*next->config);
  publish(std::move(next));
  return true;
}

void ShimServer::begin_shutdown() {
  util::log_info("shutting down: no new connections; waiting up to {}s for {} in-flight requests",
                 std::chrono::duration_cast<std::chrono::seconds>(drain_timeout()).count(), in_flight());
  m_http.begin_drain();
}

std::chrono::milliseconds ShimServer::drain_timeout() const {
  auto current = state();
  return current->config ? current->config->server.drain_timeout : config::ServerSettings{}.drain_timeout;
}

void ShimServer::install_routes() {
  m_http.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return guard_and_serve_own(req, res); });
  auto forward = [this](const httplib::Request& req, httplib::Response& res) {
    m_relay.handle(state(), req, res, [] { return LoopbackServer::current_client_gone(); });
  };
  m_http.Get(".*", forward);
  m_http.Post(".*", forward);
  m_http.Put(".*", forward);
  m_http.Patch(".*", forward);
  m_http.Delete(".*", forward);
  m_http.Options(".*", forward);
  // httplib's own error answers (400 malformed, 413, 414) carry no body: say why.
  m_http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        bool httplib_refusal = res.status == 400 || res.status == 413 || res.status == 414;
        if (!httplib_refusal || !res.body.empty() || res.has_header("Content-Type")) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        std::string message = res.status == 413   ? "request body exceeds max_request_body"
                              : res.status == 414 ? "request line too long"
                                                  : "malformed request";
        refuse(res, res.status, fmt::format("keyshim: {}", message), fmt::format("http_{}", res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  m_http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    refuse(res, 500, "keyshim: internal error", "internal_error");
  });
}

httplib::Server::HandlerResponse ShimServer::guard_and_serve_own(const httplib::Request& req,
                                                                 httplib::Response& res) {
  using HR = httplib::Server::HandlerResponse;
  std::shared_ptr<const relay::PoolState> current = state();
  std::string host = req.get_header_value("Host");
  if (!is_loopback_host_header(host)) {
    util::log_warn("refused {} {}: Host \"{}\" is not a loopback name", req.method, req.path, host);
    refuse(res, 403, "keyshim: the Host header must name a loopback address or localhost", "forbidden_host");
    return HR::Handled;
  }
  static const std::vector<std::string> k_no_origins;
  const auto& allowed = current->config ? current->config->server.allowed_origins : k_no_origins;
  if (req.has_header("Origin") && !origin_allowed(req.get_header_value("Origin"), allowed)) {
    util::log_warn("refused {} {}: Origin \"{}\" is not in allowed_origins", req.method, req.path,
                   req.get_header_value("Origin"));
    refuse(res, 403, "keyshim: this Origin is not in allowed_origins", "forbidden_origin");
    return HR::Handled;
  }
  if (req.path == "/health" && (req.method == "GET" || req.method == "HEAD")) {
    pool::Counts counts = current->pool ? current->pool->counts() : pool::Counts{};
    answer_json(res, counts.available > 0 ? 200 : 503, health_json(counts));
    return HR::Handled;
  }
  // Connectivity probes (`HEAD /`) are answered here: they need no key and
  // must work while every key is cooling.
  if (req.path == "/" && req.method == "HEAD") {
    res.status = 200;
    return HR::Handled;
  }
  const auto& token = current->config ? current->config->server.client_token : std::nullopt;
  if (token && !presents_token(req, *token)) {
    util::log_warn("refused {} {}: missing or wrong client_token", req.method, req.path);
    refuse(res, 401, "keyshim: this keyshim requires its client_token as the API key",
           "invalid_client_token");
    return HR::Handled;
  }
  if (req.path == "/status" && req.method == "GET") {
    std::vector<pool::KeySnapshot> keys =
        current->pool ? current->pool->snapshot() : std::vector<pool::KeySnapshot>{};
    pool::Counts counts = current->pool ? current->pool->counts() : pool::Counts{};
    InstanceInfo info{static_cast<long>(::getpid()), m_generation.load(), m_options.config_path,
                      current->problem, m_listen.text()};
    answer_json(res, 200, status_json(keys, counts, util::system_clock().now(), info));
    return HR::Handled;
  }
  return HR::Unhandled;
}

void log_key_table(const config::Config& config) {
  for (const config::KeyConfig& key : config.keys) {
    util::log_info("key {} {} {} auth={}", key.label, key.secret.fingerprint(), key.base_url.text(),
                   key.auth.text());
  }
}

} // namespace keyshim::server
