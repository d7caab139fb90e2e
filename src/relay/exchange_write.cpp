// Writing to the client: the commit point, relayed pieces, whole answers,
// and the end of the exchange.
#include "relay/exchange.hpp"

#include "relay/health_report.hpp"
#include "relay/redact.hpp"
#include "util/log.hpp"

#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <array>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

constexpr std::string_view k_crlf = "\r\n";
constexpr std::string_view k_last_chunk = "0\r\n\r\n";

} // namespace

// The commit point: the first byte of this response goes to the client.
// Failover stops here because after it the client holds bytes from one key's
// generation; splicing another key's answer would corrupt it, and a replay
// would bill twice for one answer.
void Exchange::commit(std::string_view first, bool done) {
  ResponseParser& parser = *m_attempt.parser;
  const auto& head = parser.get();
  int status = static_cast<int>(head.result_int());
  bool no_body = m_request.method() == http::verb::head || status == 204 || status == 304;
  if (no_body) {
    m_framing = Framing::none;
  } else if (parser.content_length()) {
    m_framing = Framing::content_length;
  } else {
    m_framing = m_request.version() >= 11 ? Framing::chunked : Framing::close;
  }
  m_close_after = !m_client_keep_alive || m_framing == Framing::close;
  std::optional<std::uint64_t> length;
  if (auto declared = parser.content_length()) {
    length = *declared;
  }
  m_prefix = client_head(head, m_framing, length, m_close_after, *m_state->redactor);
  m_head_sent = false;

  const config::KeyConfig& key = m_pool.key(m_attempt.index);
  m_pool.report(m_attempt.index, model(), served_report(status));
  m_record.key_label = key.label;
  m_record.chain.push_back(fmt::format("{}:{}", key.label, status));
  m_record.ttfb = duration_cast<milliseconds>(m_context.clock.now() - m_started);
  m_record.status = status;
  m_record.stream = m_framing == Framing::chunked || m_framing == Framing::close;
  m_phase = Phase::streaming;
  m_usage.emplace(head[http::field::content_type], head[http::field::content_encoding]);
  arm_deadline(Watchdog::Kind::idle,
               m_settings.idle_timeout); // may be earlier than the first-byte one
  write_piece(first, done);
}

// One write per piece read: the head (first time), the chunk framing around
// the piece, and the last-chunk when the body is complete.
void Exchange::write_piece(std::string_view data, bool last) {
  if (m_usage) {
    m_usage->feed(data); // reads a copy as it passes; the bytes written are `data` as received
  }
  if (m_head_sent) {
    m_prefix.clear();
  }
  m_head_sent = true;
  m_suffix.clear();
  if (m_framing == Framing::chunked) {
    if (!data.empty()) {
      fmt::format_to(std::back_inserter(m_prefix), "{:x}\r\n", data.size());
      m_suffix = k_crlf;
    }
    if (last) {
      m_suffix += k_last_chunk;
    }
  }
  std::array<asio::const_buffer, 3> buffers = {asio::buffer(m_prefix), asio::buffer(data.data(), data.size()),
                                               asio::buffer(m_suffix)};
  asio::async_write(m_client->socket(), buffers,
                    [self = shared_from_this(), n = data.size(), last](const ErrorCode& ec, std::size_t) {
                      self->on_piece_written(ec, n, last);
                    });
}

void Exchange::on_piece_written(const ErrorCode& ec, std::size_t bytes, bool last) {
  if (m_phase != Phase::streaming) {
    return;
  }
  if (ec) {
    m_record.error = "client went away mid-stream";
    m_record.client_left = true;
    drop_connection();
    finish(Downstream::Next::drop);
    return;
  }
  m_record.bytes += bytes;
  m_watchdog.note_progress(m_context.clock.now());
  if (!last) {
    read_piece();
    return;
  }
  ResponseParser& parser = *m_attempt.parser;
  if (parser.is_done() && parser.keep_alive()) {
    m_context.upstreams.put_idle(std::move(m_attempt.conn));
  } else {
    drop_connection();
  }
  finish(m_close_after ? Downstream::Next::close : Downstream::Next::request);
}

// After the commit point a failure can no longer move to another key: the
// client has bytes from this one. The connection closes without the final
// chunk (or short of its Content-Length), which every client reports as an
// error: never a silent short answer, never a fabricated [DONE].
void Exchange::stream_failed(const std::string& why) {
  m_record.error = why;
  util::log_debug("closing stream: {}", why);
  drop_connection();
  finish(Downstream::Next::drop);
}

void Exchange::answer(const Answer& answer) {
  release_key();
  m_phase = Phase::answering;
  m_watchdog.stop();
  m_record.status = answer.status;
  bool close = !m_client_keep_alive;
  m_answer_bytes = serialize(answer, m_request.method() == http::verb::head, close);
  m_record.bytes = answer.body.size();
  asio::async_write(m_client->socket(), asio::buffer(m_answer_bytes),
                    [self = shared_from_this(), close](const ErrorCode& ec, std::size_t) {
                      self->on_answer_written(ec, close);
                    });
}

void Exchange::on_answer_written(const ErrorCode& ec, bool close) {
  if (m_phase != Phase::answering) {
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
// and the body bytes relayed. `m_usage` exists from the commit point on, so
// a relayed error or keyshim's own answer counts toward no key.
void Exchange::count_usage() {
  if (!m_usage) {
    return;
  }
  policy::Usage usage = m_usage->finish();
  m_usage.reset();
  m_pool.count_bytes(m_attempt.index, m_record.bytes);
  m_record.input_tokens = usage.input;
  m_record.output_tokens = usage.output;
  if (usage.input || usage.output) {
    m_pool.count_tokens(m_attempt.index, usage.input.value_or(0), usage.output.value_or(0));
  }
}

void Exchange::finish(Downstream::Next next) {
  if (m_phase == Phase::done) {
    return;
  }
  stop_waiting();
  m_phase = Phase::done;
  ++m_generation;
  m_watchdog.stop();
  m_timer.cancel();
  count_usage();
  release_key();
  m_record.duration = duration_cast<milliseconds>(m_context.clock.now() - m_started);
  log_request(m_record);
  if (m_watching_client) {
    ErrorCode ignored;
    m_client->socket().cancel(ignored); // ends the hang-up watch; nothing else is pending
    m_watching_client = false;
  }
  m_client->exchange_finished(next);
}

} // namespace keyshim::relay
