#include "relay/ws_frames.hpp"

#include <algorithm>
#include <random>

namespace keyshim::relay {
namespace {

constexpr unsigned k_fin = 0x80;
constexpr unsigned k_opcode = 0x0f;
constexpr unsigned k_masked = 0x80;
constexpr unsigned k_rsv1 = 0x40; // permessage-deflate: the message is compressed
constexpr unsigned k_opcode_close = 0x8;
constexpr unsigned k_first_control = 0x8;
constexpr std::size_t k_max_control_payload = 125;
constexpr std::size_t k_max_close_reason = 123;

// The header's full size once its first two bytes are known.
std::size_t header_size(const unsigned char* header) {
  std::size_t size = 2;
  unsigned length = header[1] & 0x7fU;
  size += length == 126 ? 2 : length == 127 ? 8 : 0;
  size += (header[1] & k_masked) != 0 ? 4 : 0;
  return size;
}

} // namespace

WsFrameScanner::Result WsFrameScanner::feed(std::string_view bytes) {
  while (!bytes.empty() && m_state != State::failed) {
    if (m_state == State::payload) {
      std::uint64_t take = std::min<std::uint64_t>(m_payload_left, bytes.size());
      take_payload(bytes.substr(0, take));
      m_payload_left -= take;
      bytes.remove_prefix(take);
      if (m_payload_left == 0) {
        m_state = State::header;
        m_messages += m_frame_ends_message ? 1 : 0;
        if (m_frame_ends_message && m_capturing) {
          m_texts.push_back(std::move(m_text));
          m_capturing = false;
        }
      }
      continue;
    }
    m_header[m_header_size++] = static_cast<unsigned char>(bytes.front());
    bytes.remove_prefix(1);
    if (m_header_size >= 2 && m_header_size == header_size(m_header)) {
      if (Result result = take_header(); result != Result::ok) {
        m_state = State::failed;
        m_failure = result;
      }
    }
  }
  return m_state == State::failed ? m_failure : Result::ok;
}

// A whole header is read: its payload length decides how many bytes follow.
WsFrameScanner::Result WsFrameScanner::take_header() {
  unsigned opcode = m_header[0] & k_opcode;
  unsigned length = m_header[1] & 0x7fU;
  std::uint64_t payload = length;
  if (length == 126) {
    payload = (std::uint64_t{m_header[2]} << 8) | m_header[3];
  } else if (length == 127) {
    payload = 0;
    for (int i = 2; i < 10; ++i) {
      payload = (payload << 8) | m_header[i];
    }
    if ((payload >> 63) != 0) {
      return Result::malformed;
    }
  }
  m_header_size = 0;
  m_frame_ends_message = false;
  if (opcode >= k_first_control) {
    if (payload > k_max_control_payload || (m_header[0] & k_fin) == 0) {
      return Result::malformed;
    }
    m_close_seen = m_close_seen || opcode == k_opcode_close;
  } else {
    if (opcode != 0) {
      m_message_size = 0; // a text or binary frame starts a message
    }
    if (payload > m_max - m_message_size) {
      return Result::too_big;
    }
    m_message_size += payload;
    m_frame_ends_message = (m_header[0] & k_fin) != 0;
  }
  start_capture(opcode, payload);
  m_payload_left = payload;
  if (payload > 0) {
    m_state = State::payload;
  } else {
    m_messages += m_frame_ends_message ? 1 : 0;
    if (m_frame_ends_message && m_capturing) {
      m_texts.push_back(std::move(m_text));
      m_capturing = false;
    }
  }
  return Result::ok;
}

// Which frames' payloads are copied: those of a captured text message,
// never a control frame's between its fragments.
void WsFrameScanner::start_capture(unsigned opcode, std::uint64_t payload) {
  m_frame_captured = false;
  if (m_capture_max == 0 || opcode >= k_first_control) {
    return;
  }
  if (opcode != 0) {
    m_capturing = opcode == k_opcode_text && (m_header[0] & k_rsv1) == 0;
    m_text.clear();
  }
  if (m_capturing && payload > m_capture_max - m_text.size()) {
    m_capturing = false; // too long to read: relayed, not copied
    m_text.clear();
  }
  m_frame_captured = m_capturing;
  m_frame_offset = 0;
  std::fill(std::begin(m_mask), std::end(m_mask), 0);
  if ((m_header[1] & k_masked) != 0) {
    std::copy_n(m_header + header_size(m_header) - 4, 4, m_mask);
  }
}

void WsFrameScanner::take_payload(std::string_view bytes) {
  if (!m_frame_captured) {
    return;
  }
  for (char byte : bytes) {
    m_text.push_back(static_cast<char>(static_cast<unsigned char>(byte) ^ m_mask[m_frame_offset++ % 4]));
  }
}

std::uint32_t ws_random_mask() {
  static std::mt19937 generator{std::random_device{}()};
  return static_cast<std::uint32_t>(generator());
}

std::string ws_frame(unsigned opcode, std::string_view payload, bool masked, std::uint32_t mask) {
  std::string frame;
  frame.push_back(static_cast<char>(k_fin | opcode));
  unsigned mask_bit = masked ? k_masked : 0;
  if (payload.size() < 126) {
    frame.push_back(static_cast<char>(mask_bit | payload.size()));
  } else if (payload.size() <= 0xffff) {
    frame.push_back(static_cast<char>(mask_bit | 126));
    frame.push_back(static_cast<char>(payload.size() >> 8));
    frame.push_back(static_cast<char>(payload.size() & 0xff));
  } else {
    frame.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      frame.push_back(static_cast<char>((std::uint64_t{payload.size()} >> shift) & 0xff));
    }
  }
  if (!masked) {
    frame.append(payload);
    return frame;
  }
  unsigned char key[4] = {static_cast<unsigned char>(mask >> 24), static_cast<unsigned char>(mask >> 16),
                          static_cast<unsigned char>(mask >> 8), static_cast<unsigned char>(mask)};
  frame.append(reinterpret_cast<const char*>(key), 4);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    frame.push_back(static_cast<char>(static_cast<unsigned char>(payload[i]) ^ key[i % 4]));
  }
  return frame;
}

std::string ws_close_frame(std::uint16_t code, std::string_view reason, bool masked, std::uint32_t mask) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xff));
  payload.append(reason.substr(0, k_max_close_reason));
  return ws_frame(k_opcode_close, payload, masked, mask);
}

} // namespace keyshim::relay
