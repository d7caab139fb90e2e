// What happens to an exchange from outside its current step: the verdict on
// a failed attempt, the deadline timer, the client hanging up, shutdown.
#include "relay/exchange.hpp"

#include "relay/health_report.hpp"
#include "relay/redact.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <sys/socket.h>

namespace keyshim::relay {
using namespace std::chrono;

const char* failure_word(policy::TransportFailure failure, bool chain) {
  switch (failure) {
  case policy::TransportFailure::connect:
    return chain ? "connect" : "connect error";
  case policy::TransportFailure::tls:
    return chain ? "tls" : "tls error";
  case policy::TransportFailure::closed_before_response:
    return chain ? "reset" : "closed before response";
  case policy::TransportFailure::first_byte_timeout:
    return chain ? "timeout" : "first byte timeout";
  case policy::TransportFailure::none:
    break;
  }
  return "error";
}

// The backoff grows from the streak of the scope the failure will count in:
// a connection failure is the key's, anything a response says may be the
// model's (account-wide verdicts use no streak).
policy::Verdict Exchange::verdict_for(const policy::Outcome& outcome) const {
  bool key_wide = outcome.transport != policy::TransportFailure::none &&
                  outcome.transport != policy::TransportFailure::first_byte_timeout;
  pool::Streaks streaks = m_pool.streaks(m_attempt.index, key_wide ? nullptr : model());
  return policy::classify(outcome, {streaks.failures, streaks.rate_limits}, util::system_clock().now(),
                          {m_settings.max_cooldown});
}

void Exchange::act(const policy::Outcome& outcome, const policy::Verdict& verdict,
                   std::string_view relay_body) {
  const std::size_t index = m_attempt.index;
  apply_health(outcome, verdict);
  release_key();
  if (outcome.transport == policy::TransportFailure::none) {
    std::string_view reason = m_attempt.parser ? m_attempt.parser->get().reason() : std::string_view{};
    m_last_error = upstream_error_answer(outcome, reason, relay_body, *m_state->redactor);
  }
  if (verdict.action == policy::Action::relay || verdict.action == policy::Action::commit) {
    answer(*m_last_error);
    return;
  }
  if (verdict.action == policy::Action::retry_same_key && !m_retried[index]) {
    m_retried[index] = true;
    m_same_key = index;
  } else {
    m_excluded[index] = true;
    m_same_key.reset();
  }
  choose_key();
}

void Exchange::apply_health(const policy::Outcome& outcome, const policy::Verdict& verdict) {
  const std::size_t index = m_attempt.index;
  const std::string& label = m_pool.key(index).label;
  bool response = outcome.transport == policy::TransportFailure::none;
  m_tried.push_back(fmt::format(
      "{}: {}", label, response ? std::to_string(outcome.status) : failure_word(outcome.transport, false)));
  m_record.chain.push_back(fmt::format(
      "{}:{}", label, response ? std::to_string(outcome.status) : failure_word(outcome.transport, true)));
  pool::Streaks streaks = m_pool.report(index, model(), health_report(outcome, verdict));
  // A model's trouble cools the pair (key, model); the key serves other models.
  const std::string* scoped = verdict.scope == policy::Scope::model ? model() : nullptr;
  std::string scope_text = scoped ? fmt::format(" for model {}", *scoped) : std::string();
  switch (verdict.change) {
  case policy::HealthChange::success:
    break;
  case policy::HealthChange::failure:
    if (verdict.cooldown.count() > 0) {
      util::log_warn("key {} cooling {}{}: {} consecutive failures ({})", label,
                     util::format_duration(verdict.cooldown), scope_text, streaks.failures, verdict.reason);
    }
    break;
  case policy::HealthChange::cool:
    util::log_warn("key {} cooling {}{}: {}", label, util::format_duration(verdict.cooldown), scope_text,
                   verdict.reason);
    break;
  case policy::HealthChange::disable:
    // A reload keeps the health of unchanged keys, so only a new key (or a
    // restart) brings this one back: retrying a revoked key helps nobody.
    util::log_error("key {} disabled: {} (replace it in the pool file and run `keyshim reload`)", label,
                    verdict.reason);
    break;
  case policy::HealthChange::none:
    break;
  }
}

// One timer per exchange. Progress only moves the watchdog's deadline; the
// timer is touched only when a deadline moves earlier, and a wait that fires
// early asks for the current one.
void Exchange::arm_deadline(Watchdog::Kind kind, milliseconds limit) {
  m_watchdog.start(kind, m_context.clock.now(), limit);
  m_timer.arm(m_watchdog.due(), [self = shared_from_this()] { self->on_timer(); });
}

void Exchange::on_timer() {
  if (m_phase == Phase::done || m_watchdog.kind() == Watchdog::Kind::none) {
    return; // nothing to wait for until the next arm_deadline
  }
  if (!m_watchdog.expired(m_context.clock.now())) {
    m_timer.arm(m_watchdog.due(), [self = shared_from_this()] { self->on_timer(); });
    return;
  }
  on_deadline();
}

void Exchange::on_deadline() {
  const config::UpstreamSettings& settings = m_settings;
  switch (m_phase) {
  case Phase::waiting:
    on_wait_deadline();
    break;
  case Phase::connecting:
    fail_attempt(policy::TransportFailure::connect,
                 fmt::format("no connection within {}", util::format_duration(settings.connect_timeout)));
    break;
  case Phase::streaming:
    stream_failed(
        fmt::format("upstream silent for more than {}", util::format_duration(settings.idle_timeout)));
    break;
  case Phase::sending:
  case Phase::awaiting_head:
  case Phase::awaiting_body:
  case Phase::probing:
  case Phase::reading_error:
    // Nothing has been sent to the client, so a silent upstream can still be
    // failed over, to another key (a replay on the same one multiplies the wait).
    m_attempt.reused = false; // not a stale connection: a real timeout
    fail_attempt(policy::TransportFailure::first_byte_timeout, "deadline passed");
    break;
  default:
    break;
  }
}

// Before and during streaming nothing reads from the client, so a hang-up
// would go unnoticed while the upstream keeps generating (and billing).
// Waiting for readability and peeking one byte tells a FIN or RST from a
// pipelined request without consuming anything.
void Exchange::watch_client() {
  m_watching_client = true;
  m_client->socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](const ErrorCode& ec) {
    self->on_client_readable(ec);
  });
}

void Exchange::on_client_readable(const ErrorCode& ec) {
  if (ec || m_phase == Phase::done || !m_watching_client) {
    return;
  }
  char byte = 0;
  ssize_t n = ::recv(m_client->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    watch_client();
    return;
  }
  if (n > 0) {
    m_watching_client = false; // a pipelined request: the client is still there
    return;
  }
  m_record.client_left = true;
  cancel(m_phase == Phase::streaming ? "client went away mid-stream"
                                     : "client closed the connection before the response started");
}

void Exchange::cancel(const std::string& why) {
  if (m_phase == Phase::done) {
    return;
  }
  if (m_phase != Phase::streaming) {
    m_record.status = 499; // nginx's "client closed request", for the log only
  }
  m_record.error = why;
  drop_connection();
  finish(Downstream::Next::drop);
}

void Exchange::abort(const std::string& why) {
  cancel(why);
}

void Exchange::drop_connection() {
  if (m_attempt.conn) {
    m_attempt.conn->close();
    m_attempt.conn.reset();
  }
}

} // namespace keyshim::relay
