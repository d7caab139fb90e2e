#pragma once
// Bytes that may or may not be text: UTF-8 checks and base64, for captured
// bodies (a JSON string must hold valid UTF-8; a gzip body is not text).
#include <cstddef>
#include <string>
#include <string_view>

namespace keyshim::util {

// True when `bytes` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool is_utf8(std::string_view bytes);

// The longest prefix of `bytes` of at most `limit` bytes that does not end
// inside a UTF-8 sequence: `limit` itself unless the bytes before it start a
// sequence that continues past it (then up to 3 bytes fewer).
std::size_t utf8_prefix(std::string_view bytes, std::size_t limit);

// Standard base64 (RFC 4648 §4) with padding.
std::string base64_encode(std::string_view bytes);

} // namespace keyshim::util
