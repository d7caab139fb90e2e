#pragma once
#include <string>
#include <string_view>

namespace keyshim::relay {

// {"error":{"message":...,"type":...,"code":...}}: the OpenAI error shape,
// which every SDK knows how to print.
std::string json_error_body(std::string_view message, std::string_view type, std::string_view code);

} // namespace keyshim::relay
