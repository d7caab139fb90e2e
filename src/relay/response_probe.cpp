#include "relay/response_probe.hpp"

#include "policy/sse_probe.hpp"

#include <algorithm>

namespace keyshim::relay {

ResponseProbe ResponseProbe::error_body(std::unique_ptr<policy::StreamDecoder> decoder) {
  ResponseProbe probe;
  probe.m_decoder = std::move(decoder);
  return probe;
}

ResponseProbe ResponseProbe::event_stream(std::unique_ptr<policy::StreamDecoder> decoder) {
  ResponseProbe probe;
  probe.m_stream = true;
  probe.m_decoder = std::move(decoder);
  return probe;
}

bool ResponseProbe::wants_more(std::string_view piece, bool done) {
  return m_stream ? take_stream_piece(piece, done) : take_error_piece(piece, done);
}

// The body is kept up to its limit; a body that cannot be decoded is judged
// as it came.
bool ResponseProbe::take_error_piece(std::string_view piece, bool done) {
  std::size_t room = k_error_body_limit - std::min(m_held.size(), k_error_body_limit);
  m_held.append(piece.substr(0, std::min(room, piece.size())));
  if (m_decoder && !m_decoder->feed(piece, m_decoded, k_error_body_limit)) {
    m_decoder.reset();
  }
  return !done && m_held.size() < k_error_body_limit;
}

// Keep-alive comments before the first event are held too. A stream whose
// start cannot be decoded, or that sends no event within the limit, is
// relayed unjudged: the probe never holds a healthy stream back for long.
bool ResponseProbe::take_stream_piece(std::string_view piece, bool done) {
  m_held.append(piece);
  if (m_decoder && !m_decoder->feed(piece, m_decoded, k_stream_limit)) {
    m_decoder.reset();
  }
  if (!m_decoder) {
    return false;
  }
  m_event_end = policy::first_event_end(m_decoded);
  return !m_event_end && !done && m_held.size() < k_stream_limit && m_decoded.size() < k_stream_limit;
}

std::optional<std::string> ResponseProbe::judged() const {
  if (!m_stream) {
    return m_decoder ? m_decoded : m_held;
  }
  if (!m_decoder || !m_event_end) {
    return std::nullopt;
  }
  return m_decoded.substr(0, *m_event_end);
}

} // namespace keyshim::relay
