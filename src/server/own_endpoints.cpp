// What keyshim answers itself, before anything is relayed: the guards that
// protect the port holding the keys, /health, /status, /metrics, `HEAD /`,
// and the 503 that explains an unusable pool file.
#include "relay/answers.hpp"
#include "relay/request_log.hpp"
#include "server/metrics.hpp"
#include "server/request_guard.hpp"
#include "server/shim_server.hpp"
#include "server/status_json.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <unistd.h>

namespace keyshim::server {
namespace {

namespace http = relay::http;

relay::Answer json(int status, std::string body) {
  relay::Answer answer;
  answer.status = status;
  answer.headers.emplace_back("Content-Type", "application/json");
  answer.body = std::move(body);
  return answer;
}

relay::Answer refusal(int status, std::string_view message, std::string_view code) {
  return relay::json_error_answer(status, message, "keyshim_refused", code);
}

// A path no pool owns, in a file without a default pool: say which exist.
relay::Answer no_pool_answer(std::string_view method, std::string_view path, const config::Config& config) {
  std::string routes;
  for (const config::PoolConfig& pool : config.pools) {
    routes += (routes.empty() ? "" : ", ") + pool.route() + "/";
  }
  relay::RequestRecord record;
  record.method = std::string(method);
  record.path = std::string(path);
  record.status = 404;
  record.error = "no pool serves this path";
  relay::log_request(record);
  return relay::json_error_answer(
      404, fmt::format("keyshim: no pool serves {}; this keyshim's pools are at {}", path, routes),
      "keyshim_no_pool", "unknown_pool");
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

} // namespace

std::optional<relay::Answer> ShimServer::answer_own(const http::request_header<>& head,
                                                    const relay::PoolState& state) const {
  std::string_view method = head.method_string();
  std::string_view path = path_of(head.target());
  std::string_view host = head[http::field::host];
  if (!is_loopback_host_header(host)) {
    util::log_warn("refused {} {}: Host \"{}\" is not a loopback name", method, path, host);
    return refusal(403, "keyshim: the Host header must name a loopback address or localhost",
                   "forbidden_host");
  }
  static const std::vector<std::string> k_no_origins;
  const auto& allowed = state.config ? state.config->server.allowed_origins : k_no_origins;
  if (auto origin = head.find(http::field::origin);
      origin != head.end() && !origin_allowed(origin->value(), allowed)) {
    util::log_warn("refused {} {}: Origin \"{}\" is not in allowed_origins", method, path, origin->value());
    return refusal(403, "keyshim: this Origin is not in allowed_origins", "forbidden_origin");
  }
  bool get_or_head = head.method() == http::verb::get || head.method() == http::verb::head;
  if (path == "/health" && get_or_head) {
    // 503 only when no pool has a key to serve with: a service manager or a
    // monitor that restarts on 503 would not help a pool whose keys cool.
    // "degraded" in the body says that some pool has none.
    std::vector<PoolReport> pools = pool_reports(state);
    return json(some_pool_serves(pools) ? 200 : 503, health_json(pools));
  }
  // Connectivity probes (`HEAD /`) are answered here: they need no key and
  // must work while every key is cooling.
  if (head.target() == "/" && head.method() == http::verb::head) {
    relay::Answer ok;
    ok.status = 200;
    return ok;
  }
  const auto& token = state.config ? state.config->server.client_token : std::nullopt;
  if (token && !presents_token(head, *token)) {
    util::log_warn("refused {} {}: missing or wrong client_token", method, path);
    return refusal(401, "keyshim: this keyshim requires its client_token as the API key",
                   "invalid_client_token");
  }
  // /status and /metrics say which keys exist and how they fare: behind the
  // token like the keys themselves.
  bool get = head.method() == http::verb::get;
  if ((path == "/status" || path == "/metrics") && get) {
    InstanceInfo info{static_cast<long>(::getpid()), m_generation.load(), m_options.config_path,
                      state.problem, m_listen.text()};
    util::TimePoint now = util::system_clock().now();
    if (path == "/status") {
      return json(200, status_json(pool_reports(state), now, info));
    }
    relay::Answer answer;
    answer.status = 200;
    answer.headers.emplace_back("Content-Type", std::string(k_metrics_content_type));
    answer.body = metrics_text(pool_reports(state), now, info);
    return answer;
  }
  if (state.config && !state.route(head.target())) {
    return no_pool_answer(method, path, *state.config);
  }
  if (!state.config) {
    relay::RequestRecord record;
    record.method = std::string(method);
    record.path = std::string(path);
    record.status = 503;
    record.error = "no usable pool file";
    relay::log_request(record);
    return relay::json_error_answer(503, state.problem, "keyshim_not_configured", "pool_file_unusable");
  }
  return std::nullopt;
}

} // namespace keyshim::server
