#include "util/http_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::util {
namespace {

TEST(HttpText, StatusLineUsesTheGivenReasonOrTheStandardOne) {
  std::string out;
  append_status_line(out, 429, "Slow Down");
  append_status_line(out, 429);
  EXPECT_EQ(out, "HTTP/1.1 429 Slow Down\r\nHTTP/1.1 429 Too Many Requests\r\n");
}

TEST(HttpText, HeadIsStatusLineFieldsLengthAndBlankLine) {
  std::string out = "kept ";
  append_status_line(out, 503);
  append_field(out, "Content-Type", "application/json");
  append_field(out, "Retry-After", "7");
  append_content_length(out, 18446744073709551615u);
  append_field(out, "Connection", "close");
  end_head(out);
  EXPECT_EQ(out, "kept HTTP/1.1 503 Service Unavailable\r\n"
                 "Content-Type: application/json\r\n"
                 "Retry-After: 7\r\n"
                 "Content-Length: 18446744073709551615\r\n"
                 "Connection: close\r\n"
                 "\r\n");
}

TEST(HttpText, CompleteResponseIsHeadFieldsLengthCloseAndBodyButNoBodyForHead) {
  const FieldList fields = {{"Content-Type", "application/json"}, {"Retry-After", "5"}};
  EXPECT_EQ(complete_response(503, {}, fields, "{}", false, true),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
  EXPECT_EQ(complete_response(200, "Fine", {}, "abc", true, false),
            "HTTP/1.1 200 Fine\r\nContent-Length: 3\r\n\r\n");
}

TEST(HttpText, RequestLineCarriesMethodAndTargetAsGiven) {
  std::string out;
  append_request_line(out, "POST", "/v1/chat/completions?x=%20");
  append_request_line(out, "CONNECT", "[::1]:443");
  EXPECT_EQ(out, "POST /v1/chat/completions?x=%20 HTTP/1.1\r\nCONNECT [::1]:443 HTTP/1.1\r\n");
}

TEST(HttpText, FieldValueCanBeWrittenInPlace) {
  std::string out;
  append_field(out, "Authorization", [](std::string& o) { o.append("Bearer ").append("k"); });
  append_field(out, "Empty", [](std::string&) {});
  EXPECT_EQ(out, "Authorization: Bearer k\r\nEmpty: \r\n");
}

TEST(HttpText, ContentLengthOfZeroIsWritten) {
  std::string out;
  append_content_length(out, 0);
  EXPECT_EQ(out, "Content-Length: 0\r\n");
}

// The statuses keyshim answers itself (head gate, guards, relay) and the ones
// the relay sees most from providers, with the phrases they have always had.
TEST(HttpText, ReasonPhrasesOfTheStatusesKeyshimSends) {
  EXPECT_EQ(reason_phrase(200), "OK");
  EXPECT_EQ(reason_phrase(204), "No Content");
  EXPECT_EQ(reason_phrase(304), "Not Modified");
  EXPECT_EQ(reason_phrase(400), "Bad Request");
  EXPECT_EQ(reason_phrase(401), "Unauthorized");
  EXPECT_EQ(reason_phrase(402), "Payment Required");
  EXPECT_EQ(reason_phrase(403), "Forbidden");
  EXPECT_EQ(reason_phrase(404), "Not Found");
  EXPECT_EQ(reason_phrase(405), "Method Not Allowed");
  EXPECT_EQ(reason_phrase(408), "Request Timeout");
  EXPECT_EQ(reason_phrase(413), "Content Too Large");
  EXPECT_EQ(reason_phrase(414), "URI Too Long");
  EXPECT_EQ(reason_phrase(422), "Unprocessable Entity");
  EXPECT_EQ(reason_phrase(429), "Too Many Requests");
  EXPECT_EQ(reason_phrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(reason_phrase(500), "Internal Server Error");
  EXPECT_EQ(reason_phrase(501), "Not Implemented");
  EXPECT_EQ(reason_phrase(502), "Bad Gateway");
  EXPECT_EQ(reason_phrase(503), "Service Unavailable");
  EXPECT_EQ(reason_phrase(504), "Gateway Timeout");
  EXPECT_EQ(reason_phrase(505), "HTTP Version Not Supported");
}

TEST(HttpText, ReasonPhraseCoversTheEndsOfTheTableAndNothingElse) {
  EXPECT_EQ(reason_phrase(100), "Continue");
  EXPECT_EQ(reason_phrase(599), "Network Connect Timeout Error");
  // Anthropic's 529 and Cloudflare's 520 have no standard phrase.
  EXPECT_EQ(reason_phrase(529), "<unknown-status>");
  EXPECT_EQ(reason_phrase(520), "<unknown-status>");
  EXPECT_EQ(reason_phrase(99), "<unknown-status>");
  EXPECT_EQ(reason_phrase(600), "<unknown-status>");
  EXPECT_EQ(reason_phrase(0), "<unknown-status>");
  EXPECT_EQ(reason_phrase(-1), "<unknown-status>");
}

TEST(HttpText, UnknownStatusWithoutReasonKeepsBeastsPlaceholder) {
  std::string out;
  append_status_line(out, 529);
  EXPECT_EQ(out, "HTTP/1.1 529 <unknown-status>\r\n");
}

TEST(HttpText, ChunkIsHexSizeLineDataAndLineEnd) {
  std::string out;
  append_chunk_size(out, 26);
  out += "abcdefghijklmnopqrstuvwxyz";
  append_chunk_end(out);
  append_chunk_size(out, 65536);
  EXPECT_EQ(out, "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n10000\r\n");
}

TEST(HttpText, LastChunkEndsTheBodyWithoutTrailers) {
  std::string out;
  append_chunk_size(out, 1);
  out += "x";
  append_chunk_end(out);
  append_last_chunk(out);
  EXPECT_EQ(out, "1\r\nx\r\n0\r\n\r\n");
}

} // namespace
} // namespace keyshim::util
