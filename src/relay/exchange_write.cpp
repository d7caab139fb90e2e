// Writing to the client: the commit point, relayed pieces, whole answers,
// the usage a response reported, and the end of the exchange.
#include "relay/exchange.hpp"

#include "relay/health_report.hpp"
#include "relay/quota_report.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
using namespace std::chrono;

// The commit point: the first byte of this response goes to the client.
// Failover stops here because after it the client holds bytes from one key's
// generation; splicing another key's answer would corrupt it, and a replay
// would bill twice for one answer.
void Exchange::commit(std::string_view first, bool done, std::string held) {
  Trying& t = *trying();
  const auto& head = t.upstream->head();
  int status = static_cast<int>(head.result_int());
  m_out.begin(t.upstream->parser(), m_request, m_keep_alive, *m_state->redactor);

  const config::KeyConfig& key = m_pool->key(t.key);
  pool::Report served = served_report(status);
  served.quota = std::exchange(m_quota, std::nullopt);
  served.replay = m_record.replay_of.has_value(); // counted apart in the key's usage
  m_pool->report(t.key, model(), served);
  if (served.quota) {
    log_set_aside(key.label, model(), *served.quota);
  }
  m_record.key_label = key.label;
  m_record.chain.push_back(key.label + ':' + std::to_string(status)); // not fmt: every request
  m_record.ttfb = duration_cast<milliseconds>(m_context.mono.now() - m_started);
  m_record.status = status;
  m_record.stream = m_out.streamed();
  capture_step(t.key, status, nullptr); // the head only at the end, if the capture is kept
  policy::UsageMeter usage(field_value(head, http::field::content_type),
                           field_value(head, http::field::content_encoding));
  m_phase = Streaming{std::move(t.upstream), t.key, std::move(usage), std::move(held)};
  Streaming& s = std::get<Streaming>(m_phase);
  arm_deadline(m_settings->idle_timeout); // may be earlier than the first-byte one
  write_piece(s.held.empty() ? first : std::string_view(s.held), done);
}

void Exchange::write_piece(std::string_view data, bool last) {
  std::get<Streaming>(m_phase).usage.feed(data); // reads a copy as it passes; `data` is written as received
  if (m_capture) {
    m_capture->tee(data); // a copy of the first bytes, up to the body limit
  }
  m_out.write(data, last, [self = shared_from_this(), n = data.size(), last](const ErrorCode& ec) {
    self->on_piece_written(ec, n, last);
  });
}

void Exchange::on_piece_written(const ErrorCode& ec, std::size_t bytes, bool last) {
  util::ClockTurn turn; // the time is read once in this handler
  Streaming* s = std::get_if<Streaming>(&m_phase);
  if (!s) {
    return;
  }
  if (ec) {
    m_record.error = "client went away mid-stream";
    m_record.client_left = true;
    drop_upstream();
    finish(Downstream::Next::drop);
    return;
  }
  m_record.bytes += bytes;
  m_watchdog.note_progress(m_context.mono.now());
  if (!last) {
    s->upstream->read_body();
    return;
  }
  s->upstream->finish(m_context.mono.now()); // kept for the next request when it ended cleanly
  finish(m_out.close_after() ? Downstream::Next::close : Downstream::Next::request);
}

// After the commit point a failure can no longer move to another key: the
// client has bytes from this one. The connection closes without the final
// chunk (or short of its Content-Length), which every client reports as an
// error: never a silent short answer, never a fabricated [DONE].
void Exchange::stream_failed(const std::string& why) {
  m_record.error = why;
  util::log_debug("closing stream: {}", why);
  drop_upstream();
  finish(Downstream::Next::drop);
}

// keyshim's own answer, or an upstream error relayed whole. `close` ends the
// connection after it even when the client would keep it (shutdown).
void Exchange::answer(const Answer& answer, bool close) {
  if (m_reopening) {
    give_up_turn(); // the client is inside a WebSocket: no HTTP answer now
    return;
  }
  m_lease.release();
  m_phase = Answering{};
  m_watchdog.stop();
  m_record.status = answer.status;
  m_record.bytes = answer.body.size();
  if (m_capture) {
    m_capture->answer(answer.headers, answer.body);
  }
  close = close || !m_keep_alive;
  m_out.answer(
      answer, m_request.method() == http::verb::head, close,
      [self = shared_from_this(), close](const ErrorCode& ec) { self->on_answer_written(ec, close); });
}

void Exchange::on_answer_written(const ErrorCode& ec, bool close) {
  if (!in<Answering>()) {
    return;
  }
  if (ec) {
    m_record.error = "client went away before the answer";
    m_record.client_left = true;
    finish(Downstream::Next::drop);
    return;
  }
  finish(close ? Downstream::Next::close : Downstream::Next::request);
}

// The tokens the response reported, for its key's usage and the log line,
// and the body bytes relayed. Only a committed response counts: a relayed
// error or keyshim's own answer counts toward no key.
void Exchange::count_usage(Streaming& s) {
  policy::Usage usage = s.usage.finish();
  const bool replay = m_record.replay_of.has_value();
  m_pool->count_bytes(s.key, m_record.bytes, replay);
  m_record.input_tokens = usage.input;
  m_record.output_tokens = usage.output;
  if (usage.input || usage.output) {
    if (m_pool->count_tokens(s.key, usage.input.value_or(0), usage.output.value_or(0), replay)) {
      log_limit_reached(m_pool->key(s.key).label, m_pool->limits(s.key), m_context.wall.now());
    }
  }
}

void Exchange::finish(Downstream::Next next) {
  if (in<Done>()) {
    return;
  }
  stop_waiting();
  drop_upstream();
  if (Streaming* s = std::get_if<Streaming>(&m_phase)) {
    count_usage(*s);
    if (m_capture && m_capture->wanted(m_record)) { // most are not: copy no head for them
      capture_response_head(s->upstream->head());
    }
  }
  m_phase = Done{};
  m_watchdog.stop();
  m_timer.cancel();
  m_lease.release();
  m_record.duration = duration_cast<milliseconds>(m_context.mono.now() - m_started);
  log_request(m_record);
  if (m_capture) {
    keep_capture();
  }
  end_client_watch();
  m_client->exchange_finished(next);
}

} // namespace keyshim::relay
