#pragma once
// The captured-shape response bodies of tests/data/usage, what each should
// count, and ways of feeding a body to a UsageMeter.
#include "policy/usage_meter.hpp"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::policy {

// For failure messages: "{input 12, output ?}".
inline void PrintTo(const Usage& usage, std::ostream* out) {
  auto field = [out](const std::optional<std::uint64_t>& value) {
    if (value) {
      *out << *value;
    } else {
      *out << '?';
    }
  };
  *out << "{input ";
  field(usage.input);
  *out << ", output ";
  field(usage.output);
  *out << '}';
}

} // namespace keyshim::policy

namespace keyshim::test {

inline constexpr std::string_view k_event_stream = "text/event-stream";
inline constexpr std::string_view k_json = "application/json";

// The body of tests/data/usage/NAME.
inline std::string usage_body(std::string_view name) {
  std::string path = std::string(KEYSHIM_TEST_DATA_DIR) + "/usage/" + std::string(name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("missing test data: usage/" + std::string(name));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct UsageFixture {
  std::string_view file;
  std::string_view content_type; // as the provider labels it
  policy::Usage expected;
};

inline const std::array<UsageFixture, 11> k_usage_fixtures{{
    {"openai_chat_stream_include_usage.sse", "text/event-stream; charset=utf-8", {1117, 46}},
    {"openai_chat_stream.sse", "text/event-stream; charset=utf-8", {}},
    {"openai_chat.json", "application/json", {2006, 300}},
    {"openai_responses_stream.sse", "text/event-stream; charset=utf-8", {2319, 612}},
    {"openai_responses.json", "application/json", {2319, 612}},
    {"anthropic_messages_stream.sse", "text/event-stream; charset=utf-8", {472, 89}},
    {"anthropic_messages_stream_cached_tool_use.sse",
     "text/event-stream; charset=utf-8",
     {12 + 248 + 1860, 84}},
    {"anthropic_messages.json", "application/json", {2095 + 1800, 503}},
    {"gemini_generate_content.json", "application/json; charset=UTF-8", {8, 12 + 130}},
    {"gemini_stream_generate_content.sse", "text/event-stream", {11, 57 + 729}},
    // streamGenerateContent without alt=sse: one JSON array, sent a chunk at a time.
    {"gemini_stream_generate_content.json", "application/json; charset=UTF-8", {11, 57 + 729}},
}};

// Feeds `pieces` in order and finishes.
inline policy::Usage meter_pieces(std::string_view content_type, std::string_view encoding,
                                  const std::vector<std::string_view>& pieces) {
  policy::UsageMeter meter(content_type, encoding);
  for (std::string_view piece : pieces) {
    meter.feed(piece);
  }
  return meter.finish();
}

inline policy::Usage meter_whole(std::string_view content_type, std::string_view body,
                                 std::string_view encoding = "") {
  return meter_pieces(content_type, encoding, {body});
}

} // namespace keyshim::test
