// The response body: reading an error body, probing a stream's first event,
// the commit point, relaying pieces, and whole answers.
#include "relay/exchange.hpp"

#include "policy/sse_probe.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include <fmt/format.h>

#include <array>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// How much of a 200 event stream is held back while looking for its first
// event, and how much of an error body is kept.
constexpr std::size_t k_probe_limit = 64 * 1024;
constexpr std::size_t k_error_body_limit = 1024 * 1024;

bool is_event_stream(const http::response_header<>& head) {
  std::string_view type = head[http::field::content_type];
  return type.size() >= 17 && util::iequals(type.substr(0, 17), "text/event-stream");
}

} // namespace

void Exchange::on_response_head() {
  ResponseParser& parser = *m_attempt.parser;
  const auto& head = parser.get();
  int status = static_cast<int>(head.result_int());
  if (status < 200 || status >= 400) {
    m_phase = Phase::reading_error;
    m_attempt.decoder = policy::make_decoder(head[http::field::content_encoding]);
  } else if (parser.is_done()) {
    commit({}, true); // no body: HEAD, 204, 304, Content-Length: 0
    return;
  } else if (status == 200 && is_event_stream(head) &&
             (m_attempt.decoder = policy::make_decoder(head[http::field::content_encoding]))) {
    m_phase = Phase::probing;
  } else {
    m_phase = Phase::awaiting_body; // commit on the first body bytes
  }
  if (parser.is_done()) {
    take_error_piece({}, true);
    return;
  }
  read_piece();
}

void Exchange::read_piece() {
  ResponseParser& parser = *m_attempt.parser;
  parser.get().body().data = m_client->piece_buffer();
  parser.get().body().size = k_piece_size;
  m_attempt.conn->with_stream([&](auto& stream) {
    http::async_read_some(
        stream, m_attempt.conn->buffer(), parser,
        [self = shared_from_this(), conn = m_attempt.conn, held = m_attempt.parser,
         generation = m_generation](const ErrorCode& ec, std::size_t) { self->on_piece(generation, ec); });
  });
}

void Exchange::on_piece(unsigned generation, const ErrorCode& error) {
  if (generation != m_generation || m_phase == Phase::done || m_phase == Phase::choosing) {
    return;
  }
  ErrorCode ec = error == http::error::need_buffer ? ErrorCode{} : error;
  ResponseParser& parser = *m_attempt.parser;
  std::size_t n = k_piece_size - parser.get().body().size;
  std::string_view piece(m_client->piece_buffer(), n);
  if (ec) {
    if (m_phase == Phase::streaming) {
      stream_failed(fmt::format("upstream {} after {} bytes", ec.message(), m_record.bytes));
    } else if (m_phase == Phase::reading_error) {
      take_error_piece(piece, true); // judge what arrived
    } else {
      fail_attempt(policy::TransportFailure::closed_before_response, ec.message());
    }
    return;
  }
  bool done = parser.is_done();
  if (n == 0 && !done) {
    read_piece(); // only a chunk header was parsed: an empty write would end the stream
    return;
  }
  m_watchdog.note_progress(m_context.clock.now());
  switch (m_phase) {
  case Phase::reading_error:
    take_error_piece(piece, done);
    break;
  case Phase::probing:
    take_probe_piece(piece, done);
    break;
  case Phase::awaiting_body:
    commit(piece, done);
    break;
  case Phase::streaming:
    write_piece(piece, done);
    break;
  default:
    break;
  }
}

void Exchange::take_error_piece(std::string_view piece, bool done) {
  Attempt& a = m_attempt;
  std::size_t room = k_error_body_limit - std::min(a.held.size(), k_error_body_limit);
  a.held.append(piece.substr(0, std::min(room, piece.size())));
  if (a.decoder && !a.decoder->feed(piece, a.decoded, k_error_body_limit)) {
    a.decoder.reset();
  }
  if (!done && a.held.size() < k_error_body_limit) {
    read_piece();
    return;
  }
  const auto& head = a.parser->get();
  bool reusable = done && a.parser->is_done() && a.parser->keep_alive();
  if (reusable) {
    m_context.upstreams.put_idle(std::move(a.conn));
  }
  policy::Outcome outcome{policy::TransportFailure::none,
                          static_cast<int>(head.result_int()),
                          {},
                          a.decoder ? a.decoded : a.held,
                          false};
  for (const auto& field : head) {
    outcome.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  act(outcome, verdict_for(outcome), a.held);
}

// The first event decides: an error event means this key failed although the
// status said 200, and nothing has been sent yet.
void Exchange::take_probe_piece(std::string_view piece, bool done) {
  Attempt& a = m_attempt;
  if (a.held.empty()) { // keep-alive comments before the first event count as a live upstream
    arm_deadline(Watchdog::Kind::idle, m_settings.idle_timeout);
  }
  a.held.append(piece);
  bool readable = a.decoder->feed(piece, a.decoded, k_probe_limit);
  std::optional<std::size_t> end = policy::first_event_end(a.decoded);
  if (readable && !end && !done && a.held.size() < k_probe_limit && a.decoded.size() < k_probe_limit) {
    read_piece();
    return;
  }
  if (readable && end) {
    const auto& head = a.parser->get();
    policy::Outcome outcome{policy::TransportFailure::none, 200, {}, a.decoded.substr(0, *end), true};
    for (const auto& field : head) {
      outcome.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    policy::Verdict verdict = verdict_for(outcome);
    if (verdict.action != policy::Action::commit) {
      // Held bytes, not nothing: when this was the last attempt, they are
      // relayed verbatim, and an empty 200 would be a silent empty answer.
      std::string held = std::move(a.held);
      drop_connection();
      act(outcome, verdict, held);
      return;
    }
  }
  commit(a.held, done);
}

} // namespace keyshim::relay
