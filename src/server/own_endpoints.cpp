// What keyshim answers itself, before anything is relayed: the guards that
// protect the port holding the keys, /health, /status, /metrics, the roots
// (`/`, `/NAME`) for GET and HEAD, and the 503 that explains an unusable pool file.
#include "server/own_endpoints.hpp"

#include "relay/answers.hpp"
#include "relay/request_log.hpp"
#include "server/capture_json.hpp"
#include "server/metrics.hpp"
#include "server/published_state.hpp"
#include "server/request_guard.hpp"
#include "server/status_json.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <charconv>

#include <unistd.h>

namespace keyshim::server {
namespace {

namespace http = relay::http;
using Head = relay::RequestHead;

// The request as the endpoints judge it.
struct Asked {
  const Head& head;
  std::string_view method;
  std::string_view path; // the target without its query
};

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

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// Host and Origin: what a web page (CSRF) or a rebound DNS name would get
// wrong. Checked before anything else, /health included.
std::optional<relay::Answer> guard_origin(const Asked& asked, const relay::PoolState& state) {
  std::string_view host = relay::field_value(asked.head, http::field::host);
  if (!is_loopback_host_header(host)) {
    util::log_warn("refused {} {}: Host \"{}\" is not a loopback name", asked.method, asked.path, host);
    return refusal(403, "keyshim: the Host header must name a loopback address or localhost",
                   "forbidden_host");
  }
  static const std::vector<std::string> k_no_origins;
  const auto& allowed = state.config ? state.config->server.allowed_origins : k_no_origins;
  if (const auto* origin = relay::first_field(asked.head, http::field::origin);
      origin != nullptr && !origin_allowed(origin->value(), allowed)) {
    util::log_warn("refused {} {}: Origin \"{}\" is not in allowed_origins", asked.method, asked.path,
                   origin->value());
    return refusal(403, "keyshim: this Origin is not in allowed_origins", "forbidden_origin");
  }
  return std::nullopt;
}

// Whether `target` is the root of keyshim or of one of its pools: `/`, or
// `/NAME` or `/NAME/` of a named pool, with or without a query. A pool's root
// is no API path: nothing there is worth a key.
bool is_pool_root(std::string_view target, const relay::PoolState& state) {
  if (path_of(target) == "/") {
    return true;
  }
  // Only a named pool's route strips a prefix: the default pool's target
  // is "/" only when the request's was, answered above.
  std::optional<relay::PoolState::Named> named = state.named_pool(target);
  if (!named) {
    return false;
  }
  std::string_view rest = path_of(named->rest);
  return rest.empty() || rest == "/";
}

// What is answered without the client_token: /health and the roots (`/`,
// `/NAME`) for GET and HEAD.
std::optional<relay::Answer> open_endpoint(const Asked& asked, const relay::PoolState& state) {
  http::verb verb = asked.head.method();
  if (asked.path == "/health" && (verb == http::verb::get || verb == http::verb::head)) {
    // 503 only when no pool has a key to serve with: a service manager or a
    // monitor that restarts on 503 would not help a pool whose keys cool.
    // "degraded" in the body says that some pool has none.
    std::vector<PoolReport> pools = pool_reports(state);
    return json(some_pool_serves(pools) ? 200 : 503, health_json(pools));
  }
  // Connectivity probes (Claude Code sends `HEAD /anthropic` at start) are
  // answered here: they need no key, must work while every key is cooling,
  // and an upstream refusing them (401, 403) must not disable the pool's keys.
  if ((verb == http::verb::head || verb == http::verb::get) && is_pool_root(asked.head.target(), state)) {
    relay::Answer ok;
    ok.status = 200;
    return ok;
  }
  return std::nullopt;
}

std::optional<relay::Answer> guard_token(const Asked& asked, const relay::PoolState& state) {
  const auto& token = state.config ? state.config->server.client_token : std::nullopt;
  if (token && !presents_token(asked.head, *token)) {
    util::log_warn("refused {} {}: missing or wrong client_token", asked.method, asked.path);
    return refusal(401, "keyshim: this keyshim requires its client_token as the API key",
                   "invalid_client_token");
  }
  return std::nullopt;
}

void log_unserved(const Asked& asked, int status, std::string error) {
  relay::RequestRecord record;
  record.method = std::string(asked.method);
  record.path = std::string(asked.path);
  record.status = status;
  record.error = std::move(error);
  relay::log_request(record);
}

// A request nothing can relay: a path no pool owns, in a file without a
// default pool (404 naming the routes that exist), or no usable pool file
// at all (503 with the reason).
std::optional<relay::Answer> unservable(const Asked& asked, const relay::PoolState& state) {
  if (state.config && !state.serves(asked.head.target())) {
    log_unserved(asked, 404, "no pool serves this path");
    return relay::no_pool_answer(asked.path, *state.config);
  }
  if (!state.config) {
    log_unserved(asked, 503, "no usable pool file");
    return relay::json_error_answer(503, state.problem, "keyshim_not_configured", "pool_file_unusable");
  }
  return std::nullopt;
}

} // namespace

OwnEndpoints::OwnEndpoints(std::string config_path, const PublishedState& published,
                           const config::ListenAddress& listen, const relay::WaitRoom& waits,
                           const relay::CaptureRing& captures)
    : m_config_path(std::move(config_path)), m_published(published), m_listen(listen), m_waits(waits),
      m_captures(captures) {
}

// The order is the contract: the guards before anything, the open endpoints
// before the token, keyshim's reports behind it like the keys themselves.
std::optional<relay::Answer> OwnEndpoints::answer(const Head& head, const relay::PoolState& state) const {
  Asked asked{head, head.method_string(), path_of(head.target())};
  if (auto refused = guard_origin(asked, state)) {
    return refused;
  }
  if (auto open = open_endpoint(asked, state)) {
    return open;
  }
  if (auto refused = guard_token(asked, state)) {
    return refused;
  }
  // /status and /metrics say which keys exist and how they fare.
  if ((asked.path == "/status" || asked.path == "/metrics") && head.method() == http::verb::get) {
    return instance_report(asked.path, state);
  }
  // Captured exchanges carry prompts and answers: behind the token too.
  if ((asked.path == "/captures" || asked.path.starts_with("/captures/")) &&
      head.method() == http::verb::get) {
    return captures(head.target(), asked.path, state);
  }
  return unservable(asked, state);
}

relay::Answer OwnEndpoints::instance_report(std::string_view path, const relay::PoolState& state) const {
  InstanceInfo info{static_cast<long>(::getpid()), m_published.generation(), m_config_path, state.problem,
                    m_listen.text()};
  util::TimePoint now = util::system_clock().now();
  info.captures = m_captures.entries().size();
  info.capture_size = state.config ? static_cast<std::size_t>(state.config->server.capture_size) : 0;
  info.capture_bytes = m_captures.bytes();
  if (path == "/status") {
    std::vector<PoolReport> pools = pool_reports(state);
    for (PoolReport& pool : pools) {
      relay::WaitRoom::Queue queue = m_waits.queue(pool.name);
      pool.waiting = queue.waiting;
      pool.oldest_wait = queue.oldest;
    }
    return json(200, status_json(pools, now, info));
  }
  relay::Answer answer;
  answer.status = 200;
  answer.headers.emplace_back("Content-Type", std::string(k_metrics_content_type));
  answer.body = metrics_text(pool_reports(state), now, info);
  return answer;
}

relay::Answer OwnEndpoints::captures(std::string_view target, std::string_view path,
                                     const relay::PoolState& state) const {
  if (path == "/captures") {
    std::string error;
    std::optional<CaptureQuery> query = parse_capture_query(target, error);
    if (!query) {
      return relay::json_error_answer(400, "keyshim: " + error, "keyshim_refused", "bad_capture_query");
    }
    RingFacts facts;
    if (state.config) {
      facts = {static_cast<std::size_t>(state.config->server.capture_size),
               state.config->server.capture_body_limit};
    }
    return json(200, captures_json(m_captures, *query, facts));
  }
  std::string_view id = path.substr(std::string_view("/captures/").size());
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), number);
  const relay::Capture* capture =
      ec == std::errc() && end == id.data() + id.size() ? m_captures.find(number) : nullptr;
  if (!capture) {
    return json(404, capture_missing_json(m_captures, id));
  }
  return json(200, capture_json(*capture));
}

} // namespace keyshim::server
