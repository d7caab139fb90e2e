#include "relay/upstream_job.hpp"

#include "policy/sse_probe.hpp"
#include "relay/answers.hpp"
#include "relay/header_rules.hpp"
#include "util/ascii.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// How much of a 200 event stream is held back while looking for its first
// event, and how much of an error body is kept for classification and relay.
constexpr std::size_t k_probe_limit = 64 * 1024;
constexpr std::size_t k_error_body_limit = 1024 * 1024;

enum class Mode { none, commit_on_first_bytes, probe_first_event, buffer_error };

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && util::iequals(text.substr(0, prefix.size()), prefix);
}

std::vector<policy::Header> to_policy_headers(const httplib::Headers& headers) {
  std::vector<policy::Header> out;
  out.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    out.push_back({name, value});
  }
  return out;
}

policy::TransportFailure transport_failure(httplib::Error error) {
  switch (error) {
  case httplib::Error::Connection:
  case httplib::Error::ConnectionTimeout:
  case httplib::Error::BindIPAddress:
    return policy::TransportFailure::connect;
  case httplib::Error::SSLConnection:
  case httplib::Error::SSLLoadingCerts:
  case httplib::Error::SSLServerVerification:
    return policy::TransportFailure::tls;
  default:
    return policy::TransportFailure::closed_before_response;
  }
}

// One word per transport failure for the log's chain=label:token list.
const char* chain_token(policy::TransportFailure failure) {
  switch (failure) {
  case policy::TransportFailure::connect:
    return "connect";
  case policy::TransportFailure::tls:
    return "tls";
  case policy::TransportFailure::closed_before_response:
    return "reset";
  case policy::TransportFailure::first_byte_timeout:
    return "timeout";
  case policy::TransportFailure::none:
    break;
  }
  return "error";
}

policy::KeyHistory history_of(const pool::KeyPool& pool, std::size_t index) {
  pool::KeyHealth health = pool.health(index);
  return {health.consecutive_failures, health.consecutive_rate_limits};
}

} // namespace

const char* describe(policy::TransportFailure failure) {
  switch (failure) {
  case policy::TransportFailure::none:
    return "response";
  case policy::TransportFailure::connect:
    return "connect error";
  case policy::TransportFailure::tls:
    return "tls error";
  case policy::TransportFailure::closed_before_response:
    return "closed before response";
  case policy::TransportFailure::first_byte_timeout:
    return "first byte timeout";
  }
  return "error";
}

UpstreamJob::UpstreamJob(std::shared_ptr<const PoolState> state, ForwardedRequest request, Exchange& exchange,
                         UpstreamClients& clients)
    : m_state(std::move(state)), m_config(*m_state->config), m_pool(*m_state->pool),
      m_request(std::move(request)), m_exchange(exchange), m_clients(clients) {
}

void UpstreamJob::run() {
  const int max_attempts = m_config.upstream.max_attempts;
  std::vector<bool> excluded(m_pool.size(), false);
  std::vector<bool> retried(m_pool.size(), false);
  constexpr std::size_t k_no_key = static_cast<std::size_t>(-1);
  std::size_t same_key = k_no_key; // set when the next attempt repeats a key
  std::optional<Answer> last_error;
  int attempts = 0;

  // Each pass either makes an attempt (bounded by max_attempts) or excludes a
  // key for good (bounded by the pool size), so the loop ends.
  while (attempts < max_attempts && !m_exchange.cancelled()) {
    std::vector<bool> mask = excluded;
    if (same_key != k_no_key) {
      mask.assign(m_pool.size(), true);
      mask[same_key] = false;
    }
    pool::Selection selection = m_pool.acquire(mask);
    if (!selection.index) {
      if (same_key != k_no_key) { // the key went cooling after its failure: move on
        excluded[same_key] = true;
        same_key = k_no_key;
        continue;
      }
      if (attempts == 0) {
        m_exchange.answer(no_key_answer(selection));
        return;
      }
      break;
    }
    std::size_t index = *selection.index;
    ++attempts;
    m_exchange.update_record([&](RequestRecord& r) { r.attempts = attempts; });
    AttemptResult result = attempt(index);
    m_pool.release(index);

    if (result.kind != AttemptResult::Kind::classified) {
      return; // committed (the stream has ended) or cancelled (nobody is listening)
    }
    const policy::Outcome& outcome = result.outcome;
    const policy::Verdict& verdict = result.verdict;
    apply_health(index, outcome, verdict);
    if (outcome.transport == policy::TransportFailure::none) {
      last_error = upstream_error_answer(outcome, m_pool);
    }
    if (verdict.action == policy::Action::relay) {
      m_exchange.answer(std::move(*last_error));
      return;
    }
    if (verdict.action == policy::Action::retry_same_key && !retried[index]) {
      retried[index] = true;
      same_key = index;
    } else {
      excluded[index] = true;
      same_key = k_no_key;
    }
  }
  if (m_exchange.cancelled()) {
    return;
  }
  // Out of attempts or keys: the last upstream error is the most truthful
  // answer; with none (only transport failures), say what each key got.
  m_exchange.answer(last_error ? std::move(*last_error) : unreachable_answer(m_tried));
}

httplib::Request UpstreamJob::upstream_request(const config::KeyConfig& key) const {
  httplib::Request up;
  up.method = m_request.method;
  up.headers = m_request.headers;
  std::string target = m_request.target;
  // The client's own query credential never travels upstream: drop every
  // parameter some key of the pool uses to carry its key.
  for (std::size_t i = 0; i < m_pool.size(); ++i) {
    const config::Auth& auth = m_pool.key(i).auth;
    if (auth.style == config::AuthStyle::query) {
      target = remove_query_param(target, auth.query_param);
    }
  }
  if (key.auth.style == config::AuthStyle::x_goog_api_key) {
    target = remove_query_param(target, "key"); // Google also reads ?key=
  }
  apply_auth(key.auth, key.secret.reveal(), up.headers, target);
  up.path = key.base_url.path_prefix + target;
  up.body = m_request.body;
  return up;
}

UpstreamJob::AttemptResult UpstreamJob::attempt(std::size_t index) {
  const config::KeyConfig& key = m_pool.key(index);
  const config::UpstreamSettings& settings = m_config.upstream;
  UpstreamTimeouts timeouts;
  timeouts.connect = settings.connect_timeout;
  timeouts.read = std::max(settings.first_byte_timeout, settings.idle_timeout) + seconds(5);
  auto client = m_clients.acquire(key.base_url, key.ca_file, timeouts);

  httplib::Request up = upstream_request(key);
  Mode mode = Mode::none;
  bool committed = false;
  int status = 0;
  httplib::Headers headers;
  std::string held; // probe or error body
  std::optional<policy::Verdict> early_verdict;
  policy::Outcome outcome;
  const auto started = steady_clock::now();

  // False when the handler expired this attempt or the client left first:
  // then nothing is committed and the attempt ends as a timeout or a cancel.
  auto do_commit = [&](int commit_status, const httplib::Headers& commit_headers) {
    auto ttfb = duration_cast<milliseconds>(steady_clock::now() - started);
    httplib::Headers client_headers = client_response_headers(commit_headers);
    // A HEAD answer has no body for httplib to measure: keep the length the
    // upstream declared for the GET it describes.
    if (m_request.method == "HEAD" && commit_headers.count("Content-Length") == 1) {
      client_headers.emplace("Content-Length", commit_headers.find("Content-Length")->second);
    }
    if (!m_exchange.commit(commit_status, std::move(client_headers))) {
      return false;
    }
    committed = true;
    m_pool.record_success(index, commit_status);
    m_exchange.update_record([&](RequestRecord& r) {
      r.key_label = key.label;
      r.chain.push_back(fmt::format("{}:{}", key.label, commit_status));
      r.ttfb = ttfb;
    });
    return true;
  };

  up.response_handler = [&](const httplib::Response& response) {
    status = response.status;
    headers = response.headers;
    bool event_stream = starts_with_ci(response.get_header_value("Content-Type"), "text/event-stream");
    if (status >= 200 && status < 400) {
      mode = (status == 200 && event_stream) ? Mode::probe_first_event : Mode::commit_on_first_bytes;
    } else {
      mode = Mode::buffer_error;
    }
    return !m_exchange.cancelled();
  };

  up.content_receiver = [&](const char* data, std::size_t size, uint64_t, uint64_t) {
    if (committed) {
      return m_exchange.push(data, size);
    }
    switch (mode) {
    case Mode::commit_on_first_bytes:
      return do_commit(status, headers) && m_exchange.push(data, size);
    case Mode::probe_first_event: {
      held.append(data, size);
      m_exchange.note_held_bytes();
      std::optional<std::size_t> end = policy::first_event_end(held);
      if (!end && held.size() < k_probe_limit) {
        return true;
      }
      // The first event decides: an error event means this key failed
      // although the status said 200, and nothing has been sent yet.
      outcome = {policy::TransportFailure::none, status, to_policy_headers(headers),
                 held.substr(0, end.value_or(held.size())), true};
      policy::Verdict verdict =
          policy::classify(outcome, history_of(m_pool, index), system_clock::now(), {settings.max_cooldown});
      if (verdict.action != policy::Action::commit) {
        early_verdict = verdict;
        return false;
      }
      if (!do_commit(status, headers)) {
        return false;
      }
      bool pushed = m_exchange.push(held.data(), held.size());
      held.clear();
      return pushed;
    }
    case Mode::buffer_error:
      if (held.size() < k_error_body_limit) {
        held.append(data, std::min(size, k_error_body_limit - held.size()));
      }
      return true;
    case Mode::none:
      break;
    }
    return true;
  };

  m_exchange.begin_attempt(client);
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  bool sent = client->send(up, response, error);
  bool reusable = m_exchange.end_attempt() && sent;
  bool expired = m_exchange.attempt_expired();
  if (reusable) {
    m_clients.release(key.base_url, key.ca_file, std::move(client));
  }

  AttemptResult result;
  if (committed) {
    std::string why;
    if (!sent) {
      why =
          m_exchange.cancelled() ? "client went away" : fmt::format("upstream {}", httplib::to_string(error));
    }
    m_exchange.finish(sent, why);
    result.kind = AttemptResult::Kind::committed;
    return result;
  }
  if (m_exchange.cancelled()) {
    result.kind = AttemptResult::Kind::cancelled;
    return result;
  }
  if (early_verdict) {
    result.outcome = std::move(outcome);
    result.verdict = *early_verdict;
    return result;
  }
  if (sent && status == 0) { // 204 or HEAD: no response_handler call, no body
    status = response.status;
    headers = response.headers;
    mode = status >= 200 && status < 400 ? Mode::commit_on_first_bytes : Mode::buffer_error;
  }
  if (sent && mode != Mode::buffer_error) {
    // A success that ended before its first body byte (empty body), or an
    // event stream that ended inside its first event: commit what there is.
    if (do_commit(status, headers)) {
      if (!held.empty()) {
        m_exchange.push(held.data(), held.size());
      }
      m_exchange.finish(true, "");
      result.kind = AttemptResult::Kind::committed;
      return result;
    }
    result.kind = AttemptResult::Kind::cancelled;
    return result;
  }
  if (sent) {
    outcome = {policy::TransportFailure::none, status, to_policy_headers(headers), std::move(held), false};
  } else {
    outcome = {};
    outcome.transport = expired ? policy::TransportFailure::first_byte_timeout : transport_failure(error);
  }
  result.verdict =
      policy::classify(outcome, history_of(m_pool, index), system_clock::now(), {settings.max_cooldown});
  result.outcome = std::move(outcome);
  return result;
}

void UpstreamJob::apply_health(std::size_t index, const policy::Outcome& outcome,
                               const policy::Verdict& verdict) {
  const std::string& label = m_pool.key(index).label;
  std::string what = outcome.transport == policy::TransportFailure::none ? std::to_string(outcome.status)
                                                                         : describe(outcome.transport);
  m_tried.push_back(fmt::format("{}: {}", label, what));
  m_exchange.update_record([&](RequestRecord& r) {
    r.chain.push_back(fmt::format("{}:{}", label,
                                  outcome.transport == policy::TransportFailure::none
                                      ? std::to_string(outcome.status)
                                      : std::string(chain_token(outcome.transport))));
  });
  int status = outcome.status;
  switch (verdict.change) {
  case policy::HealthChange::success:
    m_pool.record_success(index, status);
    break;
  case policy::HealthChange::failure:
    m_pool.record_failure(index, status, verdict.cooldown, verdict.reason);
    if (verdict.cooldown.count() > 0) {
      util::log_warn("key {} cooling {}: {} consecutive failures ({})", label,
                     util::format_duration(verdict.cooldown), m_pool.health(index).consecutive_failures,
                     verdict.reason);
    }
    break;
  case policy::HealthChange::cool:
    m_pool.record_cooldown(index, status, verdict.cooldown, verdict.rate_limited, verdict.reason);
    util::log_warn("key {} cooling {}: {}", label, util::format_duration(verdict.cooldown), verdict.reason);
    break;
  case policy::HealthChange::disable:
    m_pool.record_disable(index, status, verdict.reason);
    // A reload keeps the health of unchanged keys, so only a new key (or a
    // restart) brings this one back: retrying a revoked key helps nobody.
    util::log_error("key {} disabled: {} (replace it in the pool file and run `keyshim reload`)", label,
                    verdict.reason);
    break;
  case policy::HealthChange::none:
    m_pool.record_neutral(index, status);
    break;
  }
}

} // namespace keyshim::relay
