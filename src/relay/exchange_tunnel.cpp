// A WebSocket handshake the upstream accepted: the commit point of an
// upgrade. Until the 101 every refusal (401, 429, 5xx, a failed connect)
// was an attempt like any other and could move to the next key; from here
// the client and the upstream talk through a WsTunnel until either ends.
//
// On a Responses WebSocket a turn that names no earlier response can still
// move: when its first event is a failure that moves to the next key over
// HTTP (a rate limit, an overload), the tunnel holds it from the client,
// another key's handshake runs through the usual phases, and its 101
// reattaches the tunnel, which re-sends the turn. With no key left, the
// held event reaches the client after all.
#include "relay/exchange.hpp"

#include "policy/socket_event.hpp"
#include "relay/health_report.hpp"
#include "relay/quota_report.hpp"
#include "relay/redact.hpp"
#include "util/log.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

namespace keyshim::relay {
using namespace std::chrono;

namespace {

std::string take_buffered(beast::flat_buffer& buffer) {
  std::string bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
  buffer.clear();
  return bytes;
}

} // namespace

void Exchange::open_tunnel() {
  Trying& t = *trying();
  const std::size_t key = t.key;
  std::string head =
      client_head(t.upstream->head(), Framing::upgrade, std::nullopt, false, *m_state->redactor);
  capture_response_head(t.upstream->head());
  std::shared_ptr<UpstreamConn> conn = t.upstream->hand_over();
  std::string from_upstream = take_buffered(conn->buffer());

  // The handshake was the request: it counts as the key's success, and an
  // open WebSocket holds no max_concurrent slot (it may idle for hours).
  pool::Report served = served_report(101);
  served.quota = std::exchange(m_quota, std::nullopt);
  served.replay = m_record.replay_of.has_value();
  m_pool->report(key, model(), served);
  if (served.quota) {
    log_set_aside(m_pool->key(key).label, model(), *served.quota);
  }
  m_lease.release();
  m_pool->count_websocket(key, +1);
  m_record.key_label = m_pool->key(key).label;
  m_record.chain.push_back(fmt::format("{}:101", m_record.key_label));
  m_record.status = 101;
  capture_step(key, 101, nullptr);
  m_watchdog.stop();
  m_timer.cancel();
  if (m_reopening) {
    Reopening left = *std::exchange(m_reopening, std::nullopt);
    m_pool->count_websocket(left.key, -1);
    m_phase = Tunnelling{left.tunnel, key};
    util::log_debug("websocket turn moved to key {}", m_record.key_label);
    left.tunnel->reattach(std::move(conn), from_upstream);
    return;
  }
  m_record.ttfb = duration_cast<milliseconds>(m_context.mono.now() - m_started);
  end_client_watch(); // the tunnel reads the client from now on
  auto tunnel = std::make_shared<WsTunnel>(m_client->socket(), std::move(conn), m_context.mono,
                                           m_context.alarms, m_settings->idle_timeout,
                                           std::shared_ptr<WsTunnel::Events>(shared_from_this(), this));
  m_phase = Tunnelling{tunnel, key};
  if (is_responses_socket(m_request.target())) {
    tunnel->read_events();
  }
  tunnel->start(std::move(head), m_client->take_read_ahead(), from_upstream);
}

// An event of a Responses WebSocket. Its tokens count for the key; a
// failure counts as the key's like the same answer over HTTP, so that a
// client that reconnects (Codex reconnects and re-sends its turn) gets
// another key. The event itself is relayed unchanged.
void Exchange::upstream_text(std::string_view text) {
  const std::size_t key = std::get<Tunnelling>(m_phase).key;
  if (std::optional<policy::Usage> usage = policy::socket_event_usage(text)) {
    if (m_pool->count_tokens(key, usage->input.value_or(0), usage->output.value_or(0),
                             m_record.replay_of.has_value())) {
      log_limit_reached(m_pool->key(key).label, m_pool->limits(key), m_context.wall.now());
    }
    m_record.input_tokens = m_record.input_tokens.value_or(0) + usage->input.value_or(0);
    m_record.output_tokens = m_record.output_tokens.value_or(0) + usage->output.value_or(0);
  }
  if (std::optional<policy::Outcome> outcome = policy::socket_event_failure(text)) {
    policy::Verdict verdict = verdict_for(key, *outcome);
    if (verdict.action != policy::Action::commit) {
      apply_health(key, *outcome, verdict);
    }
  }
}

// The first event of a turn that could move. A failure that would move an
// HTTP request to the next key moves the turn, while attempts remain.
bool Exchange::divert_turn(std::string_view first_event) {
  const std::size_t key = std::get<Tunnelling>(m_phase).key;
  std::optional<policy::Outcome> outcome = policy::socket_event_failure(first_event);
  policy::Verdict verdict = outcome ? verdict_for(key, *outcome) : policy::Verdict{};
  if (!outcome || verdict.action == policy::Action::commit || verdict.action == policy::Action::relay ||
      m_plan.out_of_attempts()) {
    upstream_text(first_event);
    return false;
  }
  apply_health(key, *outcome, verdict);
  m_plan.after_failure(key, verdict.action);
  // After the tunnel's handler has returned: the handshake may end at once.
  asio::post(m_client->socket().get_executor(), [self = shared_from_this()] { self->reopen(); });
  return true;
}

void Exchange::reopen() {
  Tunnelling* t = std::get_if<Tunnelling>(&m_phase);
  if (!t) {
    return; // closed meanwhile
  }
  m_reopening = Reopening{t->tunnel, t->key};
  choose_key(); // its 101 reattaches the tunnel; no key left ends in give_up_turn()
}

// No other key could take the turn: its held event reaches the client.
void Exchange::give_up_turn() {
  Reopening left = *std::exchange(m_reopening, std::nullopt);
  m_lease.release();
  m_watchdog.stop();
  m_timer.cancel();
  m_phase = Tunnelling{left.tunnel, left.key};
  left.tunnel->give_up("no other key could take the turn");
}

void Exchange::tunnel_closed(const WsTunnel::Summary& summary) {
  std::size_t key = 0;
  if (Tunnelling* t = std::get_if<Tunnelling>(&m_phase)) {
    key = t->key;
  } else if (m_reopening) { // the client left while its turn was moving
    key = std::exchange(m_reopening, std::nullopt)->key;
    drop_upstream();
  } else {
    return;
  }
  m_pool->count_websocket(key, -1);
  m_pool->count_bytes(key, summary.bytes_down, m_record.replay_of.has_value());
  m_record.bytes = summary.bytes_down;
  m_record.websocket = fmt::format(
      "{} messages up, {} down, {} bytes up{}; {}", summary.messages_up, summary.messages_down,
      summary.bytes_up, summary.turns_resent ? fmt::format(", {} turns moved", summary.turns_resent) : "",
      summary.end);
  finish(Downstream::Next::drop); // the tunnel closed the client's connection
}

} // namespace keyshim::relay
