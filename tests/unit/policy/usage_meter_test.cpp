// Reading token usage from each API's responses, streamed and not, and staying
// unknown, never wrong, for anything else.
#include "policy/usage_meter.hpp"

#include "usage_fixtures.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::policy {
namespace {

using test::k_event_stream;
using test::k_json;
using test::meter_whole;
using test::usage_body;

const Usage k_unknown{};

Usage meter_fixture(std::string_view file, std::string_view content_type) {
  return meter_whole(content_type, usage_body(file));
}

// An Anthropic stream reduced to its usage-bearing events.
std::string anthropic_events(const std::string& start_usage, const std::string& delta_usage) {
  return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":"
         "\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":" +
         start_usage +
         "}}\n\n"
         "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
         "\"usage\":" +
         delta_usage + "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

TEST(UsageMeter, CountsAMemberNamedUsageOrUsageMetadataWhateverTheSpacingAroundIt) {
  EXPECT_EQ(meter_whole(k_json, R"({"a":1, "usage" :  {"input_tokens":3,"output_tokens":4}})"),
            (Usage{3, 4}));
  EXPECT_EQ(meter_whole(k_json, R"({"usage":{"prompt_tokens":5,"completion_tokens":6}})"), (Usage{5, 6}));
  EXPECT_EQ(meter_whole(k_json, R"({"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":7}})"),
            (Usage{2, 7}));
}

TEST(UsageMeter, StaysUnknownForTextThatMerelyMentionsUsage) {
  for (const char* body :
       {R"({"usage":null})", R"({"xusage":{"input_tokens":1}})", R"({"usages":{"input_tokens":1}})",
        R"({"text":"usage \"usage\":{\"input_tokens\":1}"})", R"({"usageMetadata":[]})", "", R"("usage)"}) {
    EXPECT_EQ(meter_whole(k_json, body), k_unknown) << body;
  }
}

TEST(UsageMeter, OpenAiChatStreamTakesTheLastChunksUsageWhenIncludeUsageWasAsked) {
  EXPECT_EQ(meter_fixture("openai_chat_stream_include_usage.sse", k_event_stream), (Usage{1117, 46}));
}

TEST(UsageMeter, OpenAiChatStreamWithoutIncludeUsageIsUnknown) {
  EXPECT_EQ(meter_fixture("openai_chat_stream.sse", k_event_stream), k_unknown);
}

TEST(UsageMeter, OpenAiChatCompletionCountsPromptAndCompletionTokens) {
  EXPECT_EQ(meter_fixture("openai_chat.json", k_json), (Usage{2006, 300}));
}

TEST(UsageMeter, ResponsesStreamTakesTheUsageOfResponseCompleted) {
  EXPECT_EQ(meter_fixture("openai_responses_stream.sse", k_event_stream), (Usage{2319, 612}));
}

TEST(UsageMeter, ResponsesStreamCutByMaxOutputTokensTakesTheUsageOfResponseIncomplete) {
  std::string body =
      "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
      "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\","
      "\"usage\":null}}\n\n"
      "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":1,"
      "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"incomplete\","
      "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":"
      "40,\"output_tokens\":16,\"total_tokens\":56}}}\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{40, 16}));
}

TEST(UsageMeter, ResponsesBodyCountsTopLevelUsage) {
  EXPECT_EQ(meter_fixture("openai_responses.json", k_json), (Usage{2319, 612}));
}

TEST(UsageMeter, AnthropicStreamTakesInputFromMessageStartAndOutputFromMessageDelta) {
  EXPECT_EQ(meter_fixture("anthropic_messages_stream.sse", k_event_stream), (Usage{472, 89}));
}

TEST(UsageMeter, AnthropicStreamCountsCacheReadsAsInput) {
  EXPECT_EQ(meter_fixture("anthropic_messages_stream_cached_tool_use.sse", k_event_stream),
            (Usage{12 + 248 + 1860, 84}));
}

TEST(UsageMeter, AnthropicMessageCountsCacheWritesAndReadsAsInput) {
  EXPECT_EQ(meter_fixture("anthropic_messages.json", k_json), (Usage{2095 + 1800, 503}));
}

TEST(UsageMeter, AnthropicMessageDeltaInputFieldsReplaceThoseOfMessageStart) {
  std::string body = anthropic_events(
      R"({"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1})",
      R"({"input_tokens":11,"cache_creation_input_tokens":null,"cache_read_input_tokens":31,"output_tokens":7})");
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{11 + 20 + 31, 7}));
}

TEST(UsageMeter, AnthropicOutputIsTheLastMessageDeltaNotTheirSum) {
  std::string body = anthropic_events(R"({"input_tokens":5,"output_tokens":1})", R"({"output_tokens":40})") +
                     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":"
                     "{\"output_tokens\":52}}\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{5, 52}));
}

TEST(UsageMeter, AnthropicStreamCutBeforeMessageDeltaHasInputButNoOutput) {
  std::string body = usage_body("anthropic_messages_stream.sse");
  body.resize(body.find("event: message_delta"));
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{472, std::nullopt}));
}

TEST(UsageMeter, GeminiResponseCountsThoughtsAsOutput) {
  EXPECT_EQ(meter_fixture("gemini_generate_content.json", k_json), (Usage{8, 12 + 130}));
}

TEST(UsageMeter, GeminiSseStreamTakesTheLastChunksTotals) {
  EXPECT_EQ(meter_fixture("gemini_stream_generate_content.sse", k_event_stream), (Usage{11, 57 + 729}));
}

TEST(UsageMeter, GeminiJsonArrayStreamTakesTheLastChunksTotals) {
  EXPECT_EQ(meter_fixture("gemini_stream_generate_content.json", k_json), (Usage{11, 57 + 729}));
}

TEST(UsageMeter, GeminiChunkWithoutCandidateCountsKeepsTheEarlierOutput) {
  std::string body =
      "data: {\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 4}}\r\n\r\n"
      "data: {\"usageMetadata\": {\"promptTokenCount\": 9,\"totalTokenCount\": 13}}\r\n\r\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{9, 4}));
}

TEST(UsageMeter, StreamCutMidEventKeepsTheCountsOfCompleteEvents) {
  // Gemini repeats running totals: a cut stream reports those of the last
  // complete chunk. A chat stream cut inside its usage chunk has no usage.
  std::string gemini = usage_body("gemini_stream_generate_content.sse");
  gemini.resize(gemini.rfind("data: ") + 100);
  EXPECT_EQ(meter_whole(k_event_stream, gemini), (Usage{11, 22 + 729}));
  std::string chat = usage_body("openai_chat_stream_include_usage.sse");
  chat.resize(chat.find("\"completion_tokens\""));
  EXPECT_EQ(meter_whole(k_event_stream, chat), k_unknown);
}

TEST(UsageMeter, LastEventWithoutItsBlankLineIsNotRead) {
  // WHATWG: an event the stream ends inside is not dispatched.
  std::string body = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), k_unknown);
  EXPECT_EQ(meter_whole(k_event_stream, body + "\n"), (Usage{3, 4}));
}

TEST(UsageMeter, JsonBodyCutShortIsUnknown) {
  std::string body = usage_body("openai_chat.json");
  body.resize(body.size() - 10);
  EXPECT_EQ(meter_whole(k_json, body), k_unknown);
}

TEST(UsageMeter, TheWordUsageInModelTextDoesNotChangeCounts) {
  // The fixtures' text already says `"usage": {...}` (escaped inside strings);
  // here a delta is nothing but the word, and a tool's arguments hold a usage
  // object of their own as a JSON string.
  std::string body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"usage\"}}]}\n\n"
                     "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
                     "{\"arguments\":\"{\\\"usage\\\":{\\\"prompt_tokens\\\":999}}\"}}]}}]}\n\n"
                     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":8}}\n\n"
                     "data: [DONE]\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{21, 8}));
}

TEST(UsageMeter, UsageNestedInsideModelContentIsNotTheResponsesUsage) {
  // A structured output whose JSON has a "usage" member, decoded: only the
  // top-level usage counts.
  std::string body = R"({"choices":[{"message":{"role":"assistant","content":null,"parsed":)"
                     R"({"usage":{"prompt_tokens":1,"completion_tokens":2}}}}],)"
                     R"("usage":{"prompt_tokens":30,"completion_tokens":12}})";
  EXPECT_EQ(meter_whole(k_json, body), (Usage{30, 12}));
}

TEST(UsageMeter, GarbageAndErrorPagesAreUnknownWithoutFuss) {
  std::string html = "<html><head><title>502 Bad Gateway</title></head><body>usage</body></html>\r\n";
  EXPECT_EQ(meter_whole("text/html", html), k_unknown);
  EXPECT_EQ(meter_whole(k_json, html), k_unknown);
  EXPECT_EQ(meter_whole(k_event_stream, html), k_unknown);
  EXPECT_EQ(meter_whole(k_json, "{\"usage\":{\"prompt_tokens\":1,"), k_unknown);
  EXPECT_EQ(meter_whole(k_json, ""), k_unknown);
  EXPECT_EQ(meter_whole(k_event_stream, "data: {\"usage\":{\"prompt_tokens\":\n\n"), k_unknown);
  EXPECT_EQ(meter_whole(k_event_stream, std::string("\0\xff\r\r\n\n\xfe", 7)), k_unknown);
  std::string deep = std::string(100, '[') + R"({"usage":{"prompt_tokens":1}})" + std::string(100, ']');
  EXPECT_EQ(meter_whole(k_json, deep), k_unknown);
}

TEST(UsageMeter, ErrorBodyIsUnknown) {
  std::string body = R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  EXPECT_EQ(meter_whole(k_json, body), k_unknown);
  EXPECT_EQ(meter_whole(k_event_stream, "event: error\ndata: " + body + "\n\n"), k_unknown);
}

TEST(UsageMeter, BodiesOfOtherTypesAreNotRead) {
  std::string body = usage_body("openai_chat.json");
  EXPECT_EQ(meter_whole("text/plain", body), k_unknown);
  EXPECT_EQ(meter_whole("application/octet-stream", body), k_unknown);
}

TEST(UsageMeter, ContentTypeIsReadWithoutCaseOrParameters) {
  std::string body = usage_body("anthropic_messages_stream.sse");
  EXPECT_EQ(meter_whole(" Text/Event-Stream ; charset=utf-8", body), (Usage{472, 89}));
  EXPECT_EQ(meter_whole("application/problem+json", R"({"usage":{"input_tokens":1,"output_tokens":2}})"),
            (Usage{1, 2}));
  EXPECT_EQ(meter_whole("", usage_body("openai_chat.json")), (Usage{2006, 300}));
}

TEST(UsageMeter, UnknownOrStackedEncodingsAreUnknown) {
  std::string body = usage_body("openai_chat.json");
  EXPECT_EQ(meter_whole(k_json, body, "compress"), k_unknown);
  EXPECT_EQ(meter_whole(k_json, body, "gzip, br"), k_unknown);
  EXPECT_EQ(meter_whole(k_json, body, "identity"), (Usage{2006, 300}));
}

TEST(UsageMeter, CountsThatAreNotWholeNonNegativeNumbersAreIgnored) {
  for (std::string_view bad : {"-1", "1.5", "\"12\"", "1e300", "null", "true", "{}"}) {
    std::string body = R"({"usage":{"prompt_tokens":)" + std::string(bad) + R"(,"completion_tokens":3}})";
    EXPECT_EQ(meter_whole(k_json, body), (Usage{std::nullopt, 3})) << bad;
  }
  EXPECT_EQ(meter_whole(k_json, R"({"usage":{"prompt_tokens":1.0e3,"completion_tokens":0}})"),
            (Usage{1000, 0}));
}

TEST(UsageMeter, EventOverTheCapIsSkippedAndLaterEventsStillCount) {
  std::string huge(UsageMeter::k_max_event_bytes, 'x');
  std::string body = "data: {\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1},\"pad\":\"" + huge +
                     "\"}\n\n"
                     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{5, 6}));
  std::string oversize_last = "data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\n"
                              "data: {\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":8},\"pad\":\"" +
                              huge + "\"}\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, oversize_last), (Usage{5, 6}));
}

TEST(UsageMeter, EventJustUnderTheCapIsRead) {
  std::string head = "data: {\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":8},\"pad\":\"";
  std::string tail = "\"}";
  std::string pad(UsageMeter::k_max_event_bytes - head.size() - tail.size(), 'x');
  EXPECT_EQ(meter_whole(k_event_stream, head + pad + tail + "\n\n"), (Usage{7, 8}));
}

TEST(UsageMeter, JsonBodyOverTheCapIsUnknown) {
  std::string pad(UsageMeter::k_max_body_bytes, ' ');
  std::string body = R"({"pad":")" + pad + R"(","usage":{"prompt_tokens":1,"completion_tokens":2}})";
  EXPECT_EQ(meter_whole(k_json, body), k_unknown);
}

TEST(UsageMeter, MultiLineDataIsJoinedAndOtherFieldsAndCommentsAreIgnored) {
  std::string body = "\xEF\xBB\xBF: keep-alive\n"
                     "retry: 3000\nid: 7\nevent: message_delta\n"
                     "data: {\"type\":\"message_delta\",\n"
                     "data:\"usage\":\n"
                     "data {\"output_tokens\":9}}\n\n";
  // The last line has no colon: a field named "data {...}", ignored.
  EXPECT_EQ(meter_whole(k_event_stream, body), k_unknown);
  body = "\xEF\xBB\xBF: keep-alive\nretry: 3000\nid: 7\n"
         "data: {\"type\":\"message_delta\",\ndata:\"usage\":\ndata: {\"output_tokens\":9}}\n\n";
  EXPECT_EQ(meter_whole(k_event_stream, body), (Usage{std::nullopt, 9}));
}

TEST(UsageMeter, FinishIsFinal) {
  UsageMeter meter(k_json, "");
  meter.feed(usage_body("openai_chat.json"));
  EXPECT_EQ(meter.finish(), (Usage{2006, 300}));
  meter.feed("garbage");
  EXPECT_EQ(meter.finish(), (Usage{2006, 300}));
}

TEST(UsageMeter, AMovedMeterGoesOnReading) {
  std::string body = usage_body("anthropic_messages_stream.sse");
  UsageMeter first(k_event_stream, "");
  first.feed(std::string_view(body).substr(0, body.size() / 2));
  UsageMeter second = std::move(first);
  second.feed(std::string_view(body).substr(body.size() / 2));
  EXPECT_EQ(second.finish(), (Usage{472, 89}));
}

} // namespace
} // namespace keyshim::policy
