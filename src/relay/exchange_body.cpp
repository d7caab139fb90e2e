// What the current attempt reports, up to the commit point: the steps that
// set its deadlines, the response head, an error body read to classify, a
// stream's first event probed, and the first bytes of any other success.
#include "relay/exchange.hpp"

#include "policy/sse_probe.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

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

void Exchange::attempt_connecting() {
  trying()->step = Trying::Step::connecting;
  arm_deadline(m_settings.connect_timeout);
}

void Exchange::attempt_sending() {
  trying()->step = Trying::Step::sending;
  arm_deadline(m_settings.first_byte_timeout);
}

void Exchange::attempt_failed(policy::TransportFailure failure, const std::string& detail) {
  fail_attempt(failure, detail);
}

void Exchange::attempt_head() {
  Trying& t = *trying();
  const ResponseParser& parser = t.upstream->parser();
  const auto& head = parser.get();
  int status = static_cast<int>(head.result_int());
  if (status < 200 || status >= 400) {
    t.step = Trying::Step::error_body;
    t.decoder = policy::make_decoder(head[http::field::content_encoding]);
  } else if (parser.is_done()) {
    commit({}, true); // no body: HEAD, 204, 304, Content-Length: 0
    return;
  } else if (status == 200 && is_event_stream(head) &&
             (t.decoder = policy::make_decoder(head[http::field::content_encoding]))) {
    t.step = Trying::Step::probe;
  } else {
    t.step = Trying::Step::first_body; // commit on the first body bytes
  }
  if (parser.is_done()) {
    take_error_piece({}, true);
    return;
  }
  t.upstream->read_body();
}

void Exchange::attempt_body(std::string_view piece, bool done) {
  m_watchdog.note_progress(m_context.mono.now());
  if (in<Streaming>()) {
    write_piece(piece, done);
    return;
  }
  switch (trying()->step) {
  case Trying::Step::error_body:
    take_error_piece(piece, done);
    break;
  case Trying::Step::probe:
    take_probe_piece(piece, done);
    break;
  default:
    commit(piece, done);
    break;
  }
}

void Exchange::attempt_body_failed(std::string_view piece, const std::string& error) {
  if (in<Streaming>()) {
    stream_failed(fmt::format("upstream {} after {} bytes", error, m_record.bytes));
  } else if (trying()->step == Trying::Step::error_body) {
    take_error_piece(piece, true); // judge what arrived
  } else {
    fail_attempt(policy::TransportFailure::closed_before_response, error);
  }
}

policy::Outcome Exchange::outcome_of(const Trying& t, int status, std::string body) const {
  policy::Outcome outcome{
      policy::TransportFailure::none, status, {}, std::move(body), t.step == Trying::Step::probe};
  for (const auto& field : t.upstream->head()) {
    outcome.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  return outcome;
}

void Exchange::take_error_piece(std::string_view piece, bool done) {
  Trying& t = *trying();
  std::size_t room = k_error_body_limit - std::min(t.held.size(), k_error_body_limit);
  t.held.append(piece.substr(0, std::min(room, piece.size())));
  if (t.decoder && !t.decoder->feed(piece, t.decoded, k_error_body_limit)) {
    t.decoder.reset();
  }
  if (!done && t.held.size() < k_error_body_limit) {
    t.upstream->read_body();
    return;
  }
  t.upstream->finish(m_context.mono.now()); // kept for the next request when it ended cleanly
  policy::Outcome outcome =
      outcome_of(t, static_cast<int>(t.upstream->head().result_int()), t.decoder ? t.decoded : t.held);
  act(t.key, outcome, verdict_for(t.key, outcome), t.held);
}

// The first event decides: an error event means this key failed although the
// status said 200, and nothing has been sent yet.
void Exchange::take_probe_piece(std::string_view piece, bool done) {
  Trying& t = *trying();
  bool first = t.held.empty(); // keep-alive comments before the first event count as a live upstream
  t.held.append(piece);
  if (first) {
    arm_deadline(m_settings.idle_timeout);
  }
  bool readable = t.decoder->feed(piece, t.decoded, k_probe_limit);
  std::optional<std::size_t> end = policy::first_event_end(t.decoded);
  if (readable && !end && !done && t.held.size() < k_probe_limit && t.decoded.size() < k_probe_limit) {
    t.upstream->read_body();
    return;
  }
  if (readable && end) {
    policy::Outcome outcome = outcome_of(t, 200, t.decoded.substr(0, *end));
    policy::Verdict verdict = verdict_for(t.key, outcome);
    if (verdict.action != policy::Action::commit) {
      // Held bytes, not nothing: when this was the last attempt, they are
      // relayed verbatim, and an empty 200 would be a silent empty answer.
      std::string held = std::move(t.held);
      drop_upstream();
      act(t.key, outcome, verdict, held);
      return;
    }
  }
  commit({}, done, std::move(t.held));
}

} // namespace keyshim::relay
