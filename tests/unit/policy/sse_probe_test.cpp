// The first event of a 200 event stream: where it ends, and whether it is an error.
#include "policy/sse_probe.hpp"

#include <gtest/gtest.h>

namespace keyshim::policy {
namespace {

TEST(SseProbe, FirstEventEndsAtTheFirstBlankLine) {
  std::string_view stream = "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\n";
  auto end = first_event_end(stream);
  ASSERT_TRUE(end);
  EXPECT_EQ(stream.substr(0, *end), "event: message_start\ndata: {\"type\":\"message_start\"}\n\n");
}

TEST(SseProbe, IncompleteFirstEventIsNullopt) {
  EXPECT_FALSE(first_event_end(""));
  EXPECT_FALSE(first_event_end("data: {\"id\":"));
  EXPECT_FALSE(first_event_end("data: {\"id\":1}\n"));
  EXPECT_FALSE(first_event_end("data: {\"id\":1}\r\n"));
}

TEST(SseProbe, CrLfAndCrFramingsAreRecognised) {
  std::string_view crlf = "data: {\"id\":1}\r\n\r\ndata: next\r\n\r\n";
  EXPECT_EQ(first_event_end(crlf), std::size_t{18});
  std::string_view cr = "data: {\"id\":1}\r\rdata: next\r\r";
  EXPECT_EQ(first_event_end(cr), std::size_t{16});
}

TEST(SseProbe, CommentOnlyBlocksBeforeTheFirstEventAreSkipped) {
  std::string_view stream = ": keep-alive\n\n: ping\r\n\r\n\ndata: {\"id\":\"chatcmpl-1\"}\n\n";
  auto end = first_event_end(stream);
  ASSERT_TRUE(end);
  EXPECT_EQ(*end, stream.size());
  EXPECT_FALSE(first_event_end(": keep-alive\n\n: keep-alive\n\n"));
}

TEST(SseProbe, ByteOrderMarkIsIgnored) {
  EXPECT_EQ(first_event_end("\xEF\xBB\xBF"
                            "data: x\n\n"),
            std::size_t{12});
}

TEST(SseProbe, AnthropicMessageStartIsNotAnError) {
  EXPECT_FALSE(
      first_event_error("event: message_start\ndata: "
                        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\","
                        "\"role\":\"assistant\",\"content\":[],\"stop_reason\":null}}\n\n"));
}

TEST(SseProbe, OpenAIChunkIsNotAnError) {
  EXPECT_FALSE(first_event_error(
      "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\",\"created\":1764417600,"
      "\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
      "\"finish_reason\":null}]}\n\n"));
}

TEST(SseProbe, NullErrorMemberIsNotAnError) {
  EXPECT_FALSE(
      first_event_error("event: response.created\ndata: {\"type\":\"response.created\",\"error\":null}\n\n"));
}

TEST(SseProbe, DoneAndPlainTextAreNotErrors) {
  EXPECT_FALSE(first_event_error("data: [DONE]\n\n"));
  EXPECT_FALSE(first_event_error("data: hello\n\n"));
  EXPECT_FALSE(first_event_error(""));
}

TEST(SseProbe, AnthropicOverloadedErrorEvent) {
  EXPECT_EQ(
      first_event_error("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                        "\"message\":\"Overloaded\"}}\n\n"),
      "overloaded_error");
}

TEST(SseProbe, AnthropicErrorPayloadWithoutEventLine) {
  EXPECT_EQ(first_event_error(
                "data: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}\n\n"),
            "api_error");
}

TEST(SseProbe, OpenAIErrorPayloadPrefersCodeOverType) {
  EXPECT_EQ(first_event_error("data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\","
                              "\"param\":null,\"code\":\"rate_limit_exceeded\"}}\n\n"),
            "rate_limit_exceeded");
  EXPECT_EQ(
      first_event_error("data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\","
                        "\"param\":null,\"code\":null}}\n\n"),
      "server_error");
}

TEST(SseProbe, GeminiErrorPayloadUsesItsStatus) {
  EXPECT_EQ(first_event_error("data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\","
                              "\"status\":\"UNAVAILABLE\"}}\r\n\r\n"),
            "UNAVAILABLE");
}

TEST(SseProbe, ResponsesApiErrorEvent) {
  EXPECT_EQ(first_event_error("event: error\ndata: {\"type\":\"error\",\"code\":\"server_is_overloaded\","
                              "\"message\":\"busy\",\"sequence_number\":0}\n\n"),
            "server_is_overloaded");
}

TEST(SseProbe, ErrorEventWithoutJsonIsNamedError) {
  EXPECT_EQ(first_event_error("event: error\ndata: upstream exploded\n\n"), "error");
  EXPECT_EQ(first_event_error("event:error\n\n"), "error");
  EXPECT_EQ(first_event_error("data: {\"error\":\"boom\"}\n\n"), "error");
}

TEST(SseProbe, MultiLineDataIsJoinedBeforeParsing) {
  EXPECT_EQ(first_event_error("event: error\n"
                              "data: {\"type\":\"error\",\n"
                              "data: \"error\":{\"type\":\"overloaded_error\"}}\n\n"),
            "overloaded_error");
}

TEST(SseProbe, CrLfFramedErrorAfterKeepAliveComments) {
  EXPECT_EQ(first_event_error(": keep-alive\r\n\r\n: ping\r\n\r\nevent: error\r\n"
                              "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\r\n\r\n"),
            "overloaded_error");
}

TEST(SseProbe, CommentLinesInsideTheEventAreIgnored) {
  EXPECT_EQ(first_event_error("event: error\n: note\ndata: {\"error\":{\"type\":\"rate_limit_error\"}}\n\n"),
            "rate_limit_error");
}

TEST(SseProbe, OnlyTheFirstEventCounts) {
  EXPECT_FALSE(first_event_error("data: {\"id\":1}\n\nevent: error\ndata: {}\n\n"));
}

// The probe reads the JSON only when the event's text contains "error" or
// a backslash: an escaped spelling still counts, a mention in a value does not.
TEST(SseProbe, AnErrorMemberSpelledWithEscapesIsStillAnError) {
  EXPECT_EQ(first_event_error("data: {\"\\u0065rror\":{\"type\":\"overloaded_error\"}}\n\n"),
            "overloaded_error");
  EXPECT_EQ(first_event_error("data: {\"type\":\"\\u0065rror\",\"code\":\"server_is_overloaded\"}\n\n"),
            "server_is_overloaded");
}

TEST(SseProbe, TheWordErrorInsideAValueIsNoError) {
  EXPECT_FALSE(first_event_error("data: {\"delta\":{\"text\":\"no error at all\"}}\n\n"));
  EXPECT_FALSE(first_event_error("event: message\ndata: {\"id\":\"chatcmpl-1\",\"object\":\"chunk\"}\n\n"));
}

TEST(SseProbe, OddErrorNamesAreReducedToError) {
  EXPECT_EQ(first_event_error("data: {\"error\":{\"type\":\"has spaces and \\n newline\"}}\n\n"), "error");
}

} // namespace
} // namespace keyshim::policy
