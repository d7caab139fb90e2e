#pragma once
// What an attempt reads of a response before the commit point, when the
// response must be judged before anything is sent: an error status's body,
// kept (up to 1 MiB) to classify, or a 200 event stream's start, held until
// its first event can be checked for an error. Pure: fed pieces, it says
// when it has read enough; tests drive it without sockets.
#include "policy/stream_decoder.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::relay {

class ResponseProbe {
public:
  // How much of a 200 event stream is held back while looking for its first
  // event, and how much of an error body is kept.
  static constexpr std::size_t k_stream_limit = 64 * 1024;
  static constexpr std::size_t k_error_body_limit = 1024 * 1024;

  ResponseProbe() = default;
  // An error response; `decoder` (null when its encoding is unknown) reads
  // a decompressed copy for the policy.
  static ResponseProbe error_body(std::unique_ptr<policy::StreamDecoder> decoder);
  // A 200 event stream in an encoding `decoder` can read.
  static ResponseProbe event_stream(std::unique_ptr<policy::StreamDecoder> decoder);

  // Take the next piece (`done`: the body is complete). True while more is
  // needed before anything can be decided.
  bool wants_more(std::string_view piece, bool done);
  // Once it wants no more: what the policy judges. The error body
  // (decompressed when it could be); for a stream, its first event, or
  // nullopt when none could be read (the stream is relayed unjudged).
  std::optional<std::string> judged() const;
  // The bytes as they came (an error body capped at its limit), to relay.
  std::string& held() { return m_held; }
  bool holding() const { return !m_held.empty(); }
  bool is_stream() const { return m_stream; }

private:
  bool take_error_piece(std::string_view piece, bool done);
  bool take_stream_piece(std::string_view piece, bool done);

  bool m_stream = false;
  std::unique_ptr<policy::StreamDecoder> m_decoder; // null when the bytes cannot be decoded
  std::string m_held;
  std::string m_decoded;
  std::optional<std::size_t> m_event_end; // a stream's first event ends here in m_decoded
};

} // namespace keyshim::relay
