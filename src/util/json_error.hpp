#pragma once
// The body of every error keyshim answers itself, from the relay (502, 503)
// and from the head gate (400, 408, 413, ...) alike.
#include <string>
#include <string_view>

namespace keyshim::util {

// {"error":{"message":...,"type":...,"code":...}}: the OpenAI error shape,
// which every SDK knows how to print.
std::string json_error_body(std::string_view message, std::string_view type, std::string_view code);

} // namespace keyshim::util
