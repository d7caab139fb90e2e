#pragma once
// The body of every error keyshim answers itself, from the relay (502, 503)
// and from the head gate (400, 408, 413, ...) alike.
#include <string>
#include <string_view>

namespace keyshim::util {

// {"error":{"message":...,"type":...,"code":...}}: the OpenAI error shape,
// which every SDK knows how to print.
std::string json_error_body(std::string_view message, std::string_view type, std::string_view code);

// The error shapes of the APIs keyshim stands in for.
enum class ErrorShape { openai, anthropic, google };

// An error body as the API of `shape` writes it, so its SDKs print the
// message: OpenAI's is json_error_body's; Anthropic's is
// {"type":"error","error":{"type":"not_found_error","message":...}} and
// Google's {"error":{"code":404,"message":...,"status":"NOT_FOUND"}}, their
// type and status words chosen by the HTTP `status` (`type` and `code` are
// OpenAI's only).
std::string api_error_body(ErrorShape shape, int status, std::string_view message, std::string_view type,
                           std::string_view code);

} // namespace keyshim::util
