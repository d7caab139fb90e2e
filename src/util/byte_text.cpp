#include "util/byte_text.hpp"

#include <cstdint>

namespace keyshim::util {
namespace {

// The length of the sequence a lead byte starts, 0 for a byte that cannot lead.
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) {
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF) {
    return 2;
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    return 4;
  }
  return 0;
}

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// The bounds RFC 3629 puts on a sequence's second byte (overlongs, surrogates, > U+10FFFF).
bool second_byte_fits(unsigned char lead, unsigned char second) {
  switch (lead) {
  case 0xE0:
    return second >= 0xA0;
  case 0xED:
    return second <= 0x9F;
  case 0xF0:
    return second >= 0x90;
  case 0xF4:
    return second <= 0x8F;
  default:
    return true;
  }
}

} // namespace

bool is_utf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    auto lead = static_cast<unsigned char>(bytes[i]);
    std::size_t n = sequence_length(lead);
    if (n == 0 || i + n > bytes.size()) {
      return false;
    }
    for (std::size_t k = 1; k < n; ++k) {
      if (!is_continuation(static_cast<unsigned char>(bytes[i + k]))) {
        return false;
      }
    }
    if (n > 1 && !second_byte_fits(lead, static_cast<unsigned char>(bytes[i + 1]))) {
      return false;
    }
    i += n;
  }
  return true;
}

std::size_t utf8_prefix(std::string_view bytes, std::size_t limit) {
  if (limit >= bytes.size()) {
    return bytes.size();
  }
  // Look back at most 3 bytes for the lead of a sequence that `limit` cuts.
  for (std::size_t back = 1; back <= 3 && back <= limit; ++back) {
    auto byte = static_cast<unsigned char>(bytes[limit - back]);
    if (is_continuation(byte)) {
      continue;
    }
    std::size_t n = sequence_length(byte);
    return n > back ? limit - back : limit;
  }
  return limit;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr std::string_view k_alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                      static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                      static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) {
      out += k_alphabet[(v >> shift) & 0x3F];
    }
  }
  std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) {
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    out += k_alphabet[(v >> 18) & 0x3F];
    out += k_alphabet[(v >> 12) & 0x3F];
    out += rest == 2 ? k_alphabet[(v >> 6) & 0x3F] : '=';
    out += '=';
  }
  return out;
}

} // namespace keyshim::util
