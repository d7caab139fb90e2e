#pragma once
// Small text helpers for config-layer messages (lowercase, location first).
#include <string>

namespace keyshim::config {

// "Error while parsing" -> "error while parsing": messages start lowercase.
std::string lowercase_first(std::string text);

// strerror(errnum), lowercased: "no such file or directory".
std::string errno_text(int errnum);

} // namespace keyshim::config
