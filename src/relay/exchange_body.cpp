// What the current attempt reports, up to the commit point: the steps that
// set its deadlines, the response head, an error body read to classify, a
// stream's first event probed, and the first bytes of any other success.
#include "relay/exchange.hpp"

#include "policy/sse_probe.hpp"
#include "relay/quota_report.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

bool is_event_stream(const ResponseHead& head) {
  std::string_view type = field_value(head, http::field::content_type);
  return type.size() >= 17 && util::iequals(type.substr(0, 17), "text/event-stream");
}

} // namespace

void Exchange::attempt_connecting() {
  trying()->step = Trying::Step::connecting;
  arm_deadline(m_settings->connect_timeout);
}

void Exchange::attempt_sending() {
  trying()->step = Trying::Step::sending;
  arm_deadline(m_settings->first_byte_timeout);
}

void Exchange::attempt_failed(policy::TransportFailure failure, const std::string& detail) {
  fail_attempt(failure, detail);
}

void Exchange::attempt_head() {
  Trying& t = *trying();
  const ResponseParser& parser = t.upstream->parser();
  const auto& head = parser.get();
  int status = static_cast<int>(head.result_int());
  // Every final response may report the key's rate limits, a success too:
  // the verdict's report (or the commit's) hands them to the pool.
  m_quota = read_quota_report(head, m_context.wall, m_settings->max_cooldown);
  std::unique_ptr<policy::StreamDecoder> decoder;
  if (status == 101 && is_websocket_upgrade(m_request)) {
    open_tunnel();
    return;
  }
  if (status < 200 || status >= 400) {
    t.step = Trying::Step::error_body;
    t.probe =
        ResponseProbe::error_body(policy::make_decoder(field_value(head, http::field::content_encoding)));
    if (parser.is_done()) {
      take_error_piece({}, true); // an error without a body is judged at once
      return;
    }
  } else if (parser.is_done()) {
    commit({}, true); // no body: HEAD, 204, 304, Content-Length: 0
    return;
  } else if (status == 200 && is_event_stream(head) &&
             (decoder = policy::make_decoder(field_value(head, http::field::content_encoding)))) {
    t.step = Trying::Step::probe; // other encodings skip the probe
    t.probe = ResponseProbe::event_stream(std::move(decoder));
  } else {
    t.step = Trying::Step::first_body; // commit on the first body bytes
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
  if (t.probe.wants_more(piece, done)) {
    t.upstream->read_body();
    return;
  }
  t.upstream->finish(m_context.mono.now()); // kept for the next request when it ended cleanly
  policy::Outcome outcome =
      outcome_of(t, static_cast<int>(t.upstream->head().result_int()), t.probe.judged().value_or(""));
  act(t.key, outcome, verdict_for(t.key, outcome), t.probe.held());
}

// The first event decides: an error event means this key failed although the
// status said 200, and nothing has been sent yet.
void Exchange::take_probe_piece(std::string_view piece, bool done) {
  Trying& t = *trying();
  bool first = !t.probe.holding();
  bool more = t.probe.wants_more(piece, done);
  if (first) {
    arm_deadline(
        m_settings->idle_timeout); // keep-alive comments before the first event count as a live upstream
  }
  if (more) {
    t.upstream->read_body();
    return;
  }
  if (std::optional<std::string> event = t.probe.judged()) {
    policy::Outcome outcome = outcome_of(t, 200, std::move(*event));
    policy::Verdict verdict = verdict_for(t.key, outcome);
    if (verdict.action != policy::Action::commit) {
      // Held bytes, not nothing: when this was the last attempt, they are
      // relayed verbatim, and an empty 200 would be a silent empty answer.
      std::string held = std::move(t.probe.held());
      drop_upstream();
      act(t.key, outcome, verdict, held);
      return;
    }
  }
  commit({}, done, std::move(t.probe.held()));
}

} // namespace keyshim::relay
