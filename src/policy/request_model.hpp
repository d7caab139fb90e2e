#pragma once
// The model a request asks for, read without altering a byte: the top-level
// "model" member of a JSON object body (OpenAI chat and Responses, Anthropic
// messages), else Gemini's `/models/NAME:` path segment. Health is kept per
// (key, model) for the failures that are a model's, not the key's.
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::policy {

// The longest model name kept as it is.
inline constexpr std::size_t k_max_model_name = 200;
// How much of an unusable name its identity shows, before "#" and 16 hex digits.
inline constexpr std::size_t k_model_identity_prefix = 48;

// nullopt when neither names a model (or "model" is not a string). A name
// that is empty, too long, or holds anything but printable ASCII (or a JSON
// escape) is still a model of its own, with a bounded identity: a sanitised
// prefix, '#' and a 64-bit hash of the raw name ("gpt_4o_#0123456789abcdef").
// The result is never empty, at most k_max_model_name bytes, printable ASCII
// without spaces. One pass over the body, no allocation but the name: bodies
// of megabytes are skipped through, not parsed.
std::optional<std::string> request_model(std::string_view target, std::string_view body);

// The raw contents (escapes undecoded) of the body's top-level string member
// `name`, when the body is a JSON object that has one; nullopt when it has
// none, the member is not a string, or the body is not JSON. The same one
// forward pass as request_model, to the member or the end of the body.
std::optional<std::string_view> top_level_string(std::string_view body, std::string_view name);

} // namespace keyshim::policy
