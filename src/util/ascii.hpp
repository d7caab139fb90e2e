#pragma once
// ASCII text helpers for protocol text (header names, tokens, units). Bytes
// outside ASCII pass through unchanged, so UTF-8 is never mangled.
#include <string>
#include <string_view>

namespace keyshim::util {

inline char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// ASCII-lowercased copy.
std::string to_lower(std::string_view text);

// Equal ignoring ASCII case.
bool iequals(std::string_view a, std::string_view b);

// Without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view text);

// Percent-encoding for URL query components: every byte but the RFC 3986
// unreserved ones (A-Z a-z 0-9 - . _ ~) becomes %XX (upper-case hex, as
// RFC 3986 recommends, unless `lower_hex`).
std::string percent_encode(std::string_view text, bool lower_hex = false);
// The reverse, with '+' read as a space (form encoding); malformed escapes
// stay as they are.
std::string percent_decode(std::string_view text);

} // namespace keyshim::util
