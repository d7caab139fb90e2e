#pragma once
// The model a request asks for, read without altering a byte: the top-level
// "model" member of a JSON object body (OpenAI chat and Responses, Anthropic
// messages), else Gemini's `/models/NAME:` path segment. Health is kept per
// (key, model) for the failures that are a model's, not the key's.
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::policy {

// The longest model name kept; a longer one counts as "no model".
inline constexpr std::size_t k_max_model_name = 200;

// nullopt when neither names a model, or the name is empty, too long, or
// holds anything but printable ASCII. One pass over the body, no allocation
// but the name: bodies of megabytes are skipped through, not parsed.
std::optional<std::string> request_model(std::string_view target, std::string_view body);

} // namespace keyshim::policy
