// A WebSocket handshake the upstream accepted: the commit point of an
// upgrade. Until the 101 every refusal (401, 429, 5xx, a failed connect)
// was an attempt like any other and could move to the next key; from here
// the client and the upstream talk through a WsTunnel until either ends.
#include "relay/exchange.hpp"

#include "policy/socket_event.hpp"
#include "relay/health_report.hpp"
#include "relay/redact.hpp"
#include "util/log.hpp"

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
  std::shared_ptr<UpstreamConn> conn = t.upstream->hand_over();
  std::string from_upstream = take_buffered(conn->buffer());

  // The handshake was the request: it counts as the key's success, and an
  // open WebSocket holds no max_concurrent slot (it may idle for hours).
  m_pool.report(key, model(), served_report(101));
  m_lease.release();
  m_pool.count_websocket(key, +1);
  m_record.key_label = m_pool.key(key).label;
  m_record.chain.push_back(fmt::format("{}:101", m_record.key_label));
  m_record.ttfb = duration_cast<milliseconds>(m_context.mono.now() - m_started);
  m_record.status = 101;

  // The tunnel reads the client from now on: the hang-up watch ends.
  m_watchdog.stop();
  m_timer.cancel();
  if (m_watching_client) {
    ErrorCode ignored;
    m_client->socket().cancel(ignored);
    m_watching_client = false;
  }
  auto tunnel = std::make_shared<WsTunnel>(
      m_client->socket(), std::move(conn), m_context.mono, m_settings.idle_timeout,
      [self = shared_from_this()](const WsTunnel::Summary& summary) { self->on_tunnel_closed(summary); });
  m_phase = Tunnelling{tunnel, key};
  if (is_responses_socket(m_request.target())) {
    tunnel->read_texts([self = shared_from_this()](std::string_view text) { self->on_tunnel_text(text); });
  }
  util::log_debug("websocket open on key {}", m_record.key_label);
  tunnel->start(std::move(head), m_client->take_read_ahead(), std::move(from_upstream));
}

// An event of a Responses WebSocket. Its tokens count for the key; a
// failure (a rate limit, an overload) counts as the key's like the same
// answer over HTTP, so that the client's reconnect (Codex reconnects and
// re-sends its turn) gets another key. The event itself reaches the client
// unchanged: a turn is not re-sent here, as it may name an earlier response
// that only this connection's key knows (previous_response_id).
void Exchange::on_tunnel_text(std::string_view text) {
  const std::size_t key = std::get<Tunnelling>(m_phase).key;
  if (std::optional<policy::Usage> usage = policy::socket_event_usage(text)) {
    m_pool.count_tokens(key, usage->input.value_or(0), usage->output.value_or(0));
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

void Exchange::on_tunnel_closed(const WsTunnel::Summary& summary) {
  const std::size_t key = std::get<Tunnelling>(m_phase).key;
  m_pool.count_websocket(key, -1);
  m_pool.count_bytes(key, summary.bytes_down);
  m_record.bytes = summary.bytes_down;
  m_record.websocket = fmt::format("{} messages up, {} down, {} bytes up; {}", summary.messages_up,
                                   summary.messages_down, summary.bytes_up, summary.end);
  finish(Downstream::Next::drop); // the tunnel closed the client's connection
}

} // namespace keyshim::relay
