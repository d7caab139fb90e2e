#pragma once
// Reading token counts out of usage reports, the counting rules of
// policy/usage_meter.hpp (internal header of the usage meter).
#include "policy/types.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace keyshim::util {
class Json;
}

namespace keyshim::policy::detail {

// True when `text` has a member named "usage" or "usageMetadata" whose value
// is an object. Inside a JSON string every quote is escaped, so this finds
// member names only, never a model's text that happens to say "usage": the
// cheap test that decides whether a payload is worth parsing at all.
bool has_usage_object(std::string_view text);

// The latest token counts seen in one response. Reports that are not JSON, or
// carry no usage, change nothing; a count that is missing, null, negative or
// not a whole number leaves the earlier one standing.
class UsageTally {
public:
  // One event's data from any of the supported event streams.
  void take_event(std::string_view data);
  // A whole JSON body: one response object, or Gemini's array of chunks.
  void take_body(std::string_view body);

  Usage result() const;

private:
  void take_payload(const util::Json& payload);
  void take_usage(const util::Json& usage, bool with_output);
  void take_usage_metadata(const util::Json& metadata);

  std::optional<std::uint64_t> m_input;          // prompt / input tokens
  std::optional<std::uint64_t> m_cache_creation; // Anthropic, added to the input
  std::optional<std::uint64_t> m_cache_read;     // Anthropic, added to the input
  std::optional<std::uint64_t> m_output;
};

} // namespace keyshim::policy::detail
