// Request capture (docs/behaviour.md §12.1): what an exchange notes for the
// capture ring as it runs, and the entry it leaves there at its end. Nothing
// here runs when the pool's `capture` is off: m_capture is empty.
#include "relay/exchange.hpp"

#include "util/ascii.hpp"

#include <iterator>

namespace keyshim::relay {
namespace {

// The chain's word for what an attempt's verdict did.
const char* verdict_word(const policy::Verdict& verdict) {
  switch (verdict.change) {
  case policy::HealthChange::cool:
    return "cool";
  case policy::HealthChange::disable:
    return "disable";
  case policy::HealthChange::failure:
    return "fail";
  default:
    break;
  }
  switch (verdict.action) {
  case policy::Action::commit:
    return "ok";
  case policy::Action::relay:
    return "relay";
  case policy::Action::retry_same_key:
    return "retry";
  case policy::Action::next_key:
    return "next";
  }
  return "next";
}

template <class Head> Fields fields_of(const Head& head) {
  Fields fields;
  fields.reserve(static_cast<std::size_t>(std::distance(head.begin(), head.end())));
  for (const auto& field : head) {
    fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return fields;
}

const util::Secret* client_token(const PoolState& state) {
  return state.config && state.config->server.client_token ? &*state.config->server.client_token : nullptr;
}

} // namespace

// The target is kept now, with its pool prefix and its query: the exchange
// rewrites it for the upstream.
void Exchange::start_capture() {
  config::CaptureMode mode = m_served->config->upstream.capture;
  if (mode == config::CaptureMode::off || m_state->config->server.capture_size == 0) {
    return;
  }
  CaptureMask mask(*m_state->redactor, client_token(*m_state));
  std::size_t read_limit =
      static_cast<std::size_t>(m_state->config->server.capture_body_limit) + mask.margin();
  m_capture.emplace(mode, std::string(m_request.target()), m_context.wall.now(), read_limit);
}

// `verdict` null: the attempt that answered (its commit or its 101).
void Exchange::capture_step(std::size_t key, int status, const policy::Verdict* verdict) {
  if (!m_capture) {
    return;
  }
  m_capture->step(m_pool->key(key).label, status, verdict ? verdict_word(*verdict) : "ok",
                  verdict ? verdict->reason : std::string(), m_context.mono.now());
}

void Exchange::capture_response_head(const ResponseHead& head) {
  if (!m_capture) {
    return;
  }
  std::string_view type = field_value(head, http::field::content_type);
  bool events = type.size() >= 17 && util::iequals(type.substr(0, 17), "text/event-stream");
  m_capture->response_head(fields_of(head), events);
}

// Masked with the keys of the state the exchange was served from (the key
// it sent is among them); kept under the newest state's capture_size, so a
// reload that lowers it applies from the next entry.
void Exchange::keep_capture() {
  if (!m_capture->wanted(m_record)) {
    return;
  }
  CaptureMask mask(*m_state->redactor, client_token(*m_state));
  CaptureDraft::Request request{fields_of(m_request.base()), m_request.body(), &m_served->query_auth_params};
  std::shared_ptr<const PoolState> newest = m_context.states.current();
  const config::ServerSettings& server =
      newest && newest->config ? newest->config->server : m_state->config->server;
  m_context.captures.push(
      m_capture->build(m_record, request, mask, static_cast<std::size_t>(server.capture_body_limit)),
      static_cast<std::size_t>(server.capture_size));
}

} // namespace keyshim::relay
