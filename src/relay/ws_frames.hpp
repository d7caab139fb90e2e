#pragma once
// The frame structure of one direction of a WebSocket connection (RFC 6455
// §5.2), read as its bytes pass and never changed: where frames begin and
// end, how large the message being sent has grown, and whether a close frame
// went by. keyshim relays a WebSocket's bytes as they are, so compression,
// fragmentation, ping/pong and close reasons cross untouched; this is what
// it needs to know of them to cap a message's size and to add a close frame
// of its own (shutdown, idle) only between two frames. Pure: no I/O.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshim::relay {

// The most a message may carry, summed over its fragments: 64 MiB. A larger
// one closes the connection with 1009 (RFC 6455 "message too big").
constexpr std::uint64_t k_max_ws_message = 64ULL * 1024 * 1024;
// The opcode of a text frame.
constexpr unsigned k_opcode_text = 0x1;

class WsFrameScanner {
public:
  enum class Result {
    ok,
    too_big,   // a message would exceed the limit
    malformed, // a frame no peer may send (a 64-bit length with its top bit set, a long control frame)
  };

  explicit WsFrameScanner(std::uint64_t max_message = k_max_ws_message) : m_max(max_message) {}

  // Also keep a copy of each uncompressed text message up to `max_bytes`
  // long (unmasked, when a client masked it), for take_texts(). Longer and
  // compressed (permessage-deflate) ones are skipped.
  void capture_texts(std::size_t max_bytes) { m_capture_max = max_bytes; }
  // The text messages completed since the last call.
  std::vector<std::string> take_texts() { return std::exchange(m_texts, {}); }

  // Read the next bytes of this direction. After a result other than ok the
  // scanner stays at that result.
  Result feed(std::string_view bytes);

  // Between two frames: a frame of keyshim's own may be written here.
  bool at_boundary() const { return m_state == State::header && m_header_size == 0; }
  // A close frame has passed: the sender is ending the connection.
  bool close_seen() const { return m_close_seen; }
  // Complete data messages that passed (fragmented ones count once).
  std::uint64_t messages() const { return m_messages; }

private:
  enum class State { header, payload, failed };
  Result take_header();
  void start_capture(unsigned opcode, std::uint64_t payload);
  void take_payload(std::string_view bytes);

  std::uint64_t m_max;
  State m_state = State::header;
  Result m_failure = Result::ok;
  unsigned char m_header[14]{};
  std::size_t m_header_size = 0; // bytes of the current header read so far
  std::uint64_t m_payload_left = 0;
  std::uint64_t m_message_size = 0; // the data message in progress, over its fragments so far
  bool m_frame_ends_message = false;
  bool m_close_seen = false;
  std::uint64_t m_messages = 0;
  std::size_t m_capture_max = 0;    // 0: nothing is captured
  bool m_capturing = false;         // the text message in progress is being copied
  bool m_frame_captured = false;    // this frame's payload belongs to it
  unsigned char m_mask[4]{};        // this frame's masking key (all zero when unmasked)
  std::uint64_t m_frame_offset = 0; // payload bytes of this frame copied so far
  std::string m_text;
  std::vector<std::string> m_texts;
};

// One whole frame of keyshim's own: FIN, `opcode` (1 text, 8 close), the
// payload unmasked towards the client, masked with `mask` towards the upstream.
std::string ws_frame(unsigned opcode, std::string_view payload, bool masked, std::uint32_t mask);

// A masking key for a frame keyshim sends upstream (RFC 6455 §5.3: unpredictable).
std::uint32_t ws_random_mask();

// A close frame of keyshim's own (code, reason up to 123 bytes): unmasked
// towards the client, masked (with `mask`) towards the upstream, as RFC 6455
// §5.3 requires of a client.
std::string ws_close_frame(std::uint16_t code, std::string_view reason, bool masked,
                           std::uint32_t mask = 0x5a3c96e1);

} // namespace keyshim::relay
