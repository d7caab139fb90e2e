// What happens to an exchange from outside its current step: the health a
// verdict changes, the deadline timer, the client hanging up, shutdown.
#include "relay/exchange.hpp"

#include "relay/health_report.hpp"
#include "relay/quota_report.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

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

void Exchange::apply_health(std::size_t index, const policy::Outcome& outcome,
                            const policy::Verdict& verdict) {
  const std::string& label = m_pool->key(index).label;
  bool response = outcome.transport == policy::TransportFailure::none;
  m_plan.note_tried(fmt::format(
      "{}: {}", label, response ? std::to_string(outcome.status) : failure_word(outcome.transport, false)));
  m_record.chain.push_back(fmt::format(
      "{}:{}", label, response ? std::to_string(outcome.status) : failure_word(outcome.transport, true)));
  capture_step(index, response ? outcome.status : 0, &verdict);
  pool::Report report = health_report(outcome, verdict);
  report.quota = std::exchange(m_quota, std::nullopt); // an error's head reports the limits too
  report.replay = m_record.replay_of.has_value();
  pool::Streaks streaks = m_pool->report(index, model(), report);
  // A model's trouble cools the pair (key, model); the key serves other models.
  log_health_change(label, verdict, verdict.scope == policy::Scope::model ? model() : nullptr, streaks);
  if (report.quota && verdict.change != policy::HealthChange::cool &&
      verdict.change != policy::HealthChange::disable) {
    log_set_aside(label, model(), *report.quota); // a 429's cooling has said it already
  }
}

// The deadline the current phase runs under: derived, never stored beside it.
Watchdog::Kind Exchange::deadline_kind() const {
  if (in<Waiting>()) {
    return Watchdog::Kind::waiting;
  }
  if (in<Streaming>()) {
    return Watchdog::Kind::idle;
  }
  const Trying* t = std::get_if<Trying>(&m_phase);
  if (!t) {
    return Watchdog::Kind::none;
  }
  if (t->step == Trying::Step::connecting) {
    return Watchdog::Kind::connect;
  }
  return t->step == Trying::Step::probe && t->probe.holding() ? Watchdog::Kind::idle
                                                              : Watchdog::Kind::first_byte;
}

// One timer per exchange. Progress only moves the watchdog's deadline; the
// timer is touched only when a deadline moves earlier, and a wait that fires
// early asks for the current one.
void Exchange::arm_deadline(milliseconds limit) {
  m_watchdog.start(deadline_kind(), m_context.mono.now(), limit);
  m_timer.arm(m_watchdog.due());
}

// The alarm keeps the earlier of the two times it is armed for.
void Exchange::arm_alarm() {
  if (m_watchdog.kind() != Watchdog::Kind::none) {
    m_timer.arm(m_watchdog.due());
  }
  if (m_client_watch == ClientWatch::later) {
    m_timer.arm(m_started + k_client_watch_delay);
  }
}

void Exchange::on_alarm() {
  if (in<Done>()) {
    return;
  }
  MonoTime now = m_context.mono.now();
  if (m_client_watch == ClientWatch::later && now >= m_started + k_client_watch_delay) {
    watch_client();
  }
  if (m_watchdog.expired(now)) {
    on_deadline();
    return;
  }
  arm_alarm(); // early for the deadline, or nothing to wait for until the next arm_deadline
}

void Exchange::on_deadline() {
  if (in<Waiting>()) {
    on_wait_deadline();
  } else if (in<Streaming>()) {
    stream_failed(
        fmt::format("upstream silent for more than {}", util::format_duration(m_settings->idle_timeout)));
  } else if (Trying* t = trying(); t && t->step == Trying::Step::connecting) {
    fail_attempt(policy::TransportFailure::connect,
                 fmt::format("no connection within {}", util::format_duration(m_settings->connect_timeout)));
  } else if (t) {
    // Nothing has been sent to the client, so a silent upstream can still be
    // failed over, to another key (a replay on the same one multiplies the wait).
    fail_attempt(policy::TransportFailure::first_byte_timeout, "deadline passed");
  }
}

// Before and during streaming nothing reads from the client, so a hang-up
// would go unnoticed while the upstream keeps generating (and billing).
// A receive that peeks one byte tells a FIN or RST (an error) from a
// pipelined request (a byte) without consuming anything. A receive, not a
// wait for readability: Asio re-registers the socket with epoll (an
// epoll_ctl call) for every wait, once per request.
void Exchange::watch_client() {
  m_client_watch = ClientWatch::on;
  m_client->socket().async_receive(
      asio::buffer(&m_peeked, 1), tcp::socket::message_peek,
      [self = shared_from_this()](const ErrorCode& ec, std::size_t n) { self->on_client_readable(ec, n); });
}

void Exchange::on_client_readable(const ErrorCode& ec, std::size_t n) {
  if (ec == asio::error::operation_aborted || in<Done>() || m_client_watch != ClientWatch::on) {
    return;
  }
  if (!ec && n > 0) {
    m_client_watch = ClientWatch::off; // a pipelined request: the client is still there
    return;
  }
  m_record.client_left = true;
  cancel(in<Streaming>() ? "client went away mid-stream"
                         : "client closed the connection before the response started");
}

// The watch ends for good: the exchange is over, or a tunnel reads the client.
void Exchange::end_client_watch() {
  if (m_client_watch == ClientWatch::on) {
    ErrorCode ignored;
    m_client->socket().cancel(ignored); // nothing else is pending on it
  }
  m_client_watch = ClientWatch::off;
}

void Exchange::cancel(const std::string& why) {
  if (in<Done>()) {
    return;
  }
  if (!in<Streaming>()) {
    m_record.status = 499; // nginx's "client closed request", for the log only
  }
  m_record.error = why;
  drop_upstream();
  finish(Downstream::Next::drop);
}

void Exchange::abort(const std::string& why) {
  if (m_reopening) { // a turn was moving: the tunnel closes the client, then reports
    drop_upstream();
    stop_waiting();
    m_lease.release();
    Reopening left = *std::exchange(m_reopening, std::nullopt);
    m_phase = Tunnelling{left.tunnel, left.key};
  }
  if (Tunnelling* t = std::get_if<Tunnelling>(&m_phase)) {
    t->tunnel->abort(why); // closes both sides with 1001, then reports
    return;
  }
  cancel(why);
}

void Exchange::drop_upstream() {
  if (Trying* t = trying(); t && t->upstream) {
    t->upstream->abandon();
  } else if (Streaming* s = std::get_if<Streaming>(&m_phase)) {
    s->upstream->abandon();
  }
}

} // namespace keyshim::relay
