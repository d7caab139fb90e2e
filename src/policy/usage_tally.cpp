// The counting rules of each API, applied to parsed usage reports. Which API
// a payload comes from is read from its shape, not from the request: the
// meter sees only the response.
#include "policy/usage_tally.hpp"

#include "policy/text.hpp"
#include "util/json.hpp"

#include <cmath>

namespace keyshim::policy::detail {
namespace {

// Doubles hold every integer up to 2^53 exactly; a count above that is noise.
constexpr double k_max_count = 9007199254740992.0;

std::optional<std::uint64_t> count_at(const util::Json& object, std::string_view name) {
  const util::Json* value = object.find(name);
  if (value == nullptr || !value->is_number()) {
    return std::nullopt;
  }
  double number = value->as_number();
  if (!(number >= 0 && number <= k_max_count) || std::floor(number) != number) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(number);
}

// The latest non-null value wins.
void update(std::optional<std::uint64_t>& field, std::optional<std::uint64_t> value) {
  if (value) {
    field = value;
  }
}

const util::Json* object_at(const util::Json& object, std::string_view name) {
  const util::Json* value = object.find(name);
  return value != nullptr && value->is_object() ? value : nullptr;
}

} // namespace

bool has_usage_object(std::string_view text) {
  // Searched without its opening quote: a find starts from the needle's first
  // character, and JSON has a quote every few bytes where `u` is rarer.
  constexpr std::string_view k_key = "usage";
  constexpr std::string_view k_metadata_tail = "Metadata";
  for (std::size_t pos = text.find(k_key); pos != std::string_view::npos; pos = text.find(k_key, pos + 1)) {
    if (pos == 0 || text[pos - 1] != '"') {
      continue;
    }
    std::size_t i = pos + k_key.size();
    if (text.substr(i, k_metadata_tail.size()) == k_metadata_tail) {
      i += k_metadata_tail.size();
    }
    if (i >= text.size() || text[i] != '"') {
      continue;
    }
    for (++i; i < text.size() && is_space(text[i]); ++i) {
    }
    if (i >= text.size() || text[i] != ':') {
      continue;
    }
    for (++i; i < text.size() && is_space(text[i]); ++i) {
    }
    if (i < text.size() && text[i] == '{') {
      return true;
    }
  }
  return false;
}

void UsageTally::take_event(std::string_view data) {
  if (!has_usage_object(data)) {
    return; // nearly every event: text deltas, pings, [DONE]
  }
  if (std::optional<util::Json> payload = util::parse_json(data)) {
    take_payload(*payload);
  }
}

void UsageTally::take_body(std::string_view body) {
  if (!has_usage_object(body)) {
    return;
  }
  std::optional<util::Json> document = util::parse_json(body);
  if (!document) {
    return;
  }
  if (document->is_array()) {
    for (const util::Json& chunk : document->items()) {
      take_payload(chunk); // Gemini's chunks repeat running totals: the last wins
    }
  } else {
    take_payload(*document);
  }
}

void UsageTally::take_payload(const util::Json& payload) {
  if (!payload.is_object()) {
    return;
  }
  std::optional<std::string> type = payload.string_at("type");
  if (type == "message_start") {
    // Anthropic: the input counts. The output count here is a placeholder
    // (typically 1); the real one comes with message_delta.
    if (const util::Json* message = object_at(payload, "message")) {
      if (const util::Json* usage = object_at(*message, "usage")) {
        take_usage(*usage, false);
      }
    }
    return;
  }
  if (type && type->starts_with("response.")) {
    // Responses API: response.completed, and response.incomplete and
    // response.failed, which end a response that was billed all the same.
    if (const util::Json* response = object_at(payload, "response")) {
      if (const util::Json* usage = object_at(*response, "usage")) {
        take_usage(*usage, true);
      }
    }
    return;
  }
  if (const util::Json* metadata = object_at(payload, "usageMetadata")) {
    take_usage_metadata(*metadata);
    return;
  }
  // OpenAI chat (a chunk or a whole completion), a whole Responses object,
  // an Anthropic message or message_delta.
  if (const util::Json* usage = object_at(payload, "usage")) {
    take_usage(*usage, true);
  }
}

void UsageTally::take_usage(const util::Json& usage, bool with_output) {
  if (usage.find("prompt_tokens") != nullptr || usage.find("completion_tokens") != nullptr) {
    // OpenAI chat. Cached and reasoning tokens are already inside these.
    update(m_input, count_at(usage, "prompt_tokens"));
    if (with_output) {
      update(m_output, count_at(usage, "completion_tokens"));
    }
    return;
  }
  // Responses API (cached tokens already inside input_tokens) and Anthropic
  // (cache writes and reads counted apart from input_tokens).
  update(m_input, count_at(usage, "input_tokens"));
  update(m_cache_creation, count_at(usage, "cache_creation_input_tokens"));
  update(m_cache_read, count_at(usage, "cache_read_input_tokens"));
  if (with_output) {
    update(m_output, count_at(usage, "output_tokens"));
  }
}

void UsageTally::take_usage_metadata(const util::Json& metadata) {
  update(m_input, count_at(metadata, "promptTokenCount"));
  std::optional<std::uint64_t> candidates = count_at(metadata, "candidatesTokenCount");
  std::optional<std::uint64_t> thoughts = count_at(metadata, "thoughtsTokenCount");
  if (candidates || thoughts) {
    m_output = candidates.value_or(0) + thoughts.value_or(0);
  }
}

Usage UsageTally::result() const {
  Usage usage;
  if (m_input) {
    usage.input = *m_input + m_cache_creation.value_or(0) + m_cache_read.value_or(0);
  }
  usage.output = m_output;
  return usage;
}

} // namespace keyshim::policy::detail
