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

} // namespace keyshim::policy
