// How log and show print captured exchanges, from /captures JSON alone.
#include "cli/capture_text.hpp"

#include <gtest/gtest.h>

namespace keyshim::cli {
namespace {

util::Json parse(const std::string& text) {
  std::optional<util::Json> json = util::parse_json(text);
  EXPECT_TRUE(json) << text;
  return json.value_or(util::Json());
}

constexpr const char* k_summary =
    R"({"id":12,"time":"2026-12-02T23:20:20.303Z","pool":"default","model":"gpt-4o","method":"POST",)"
    R"("target":"/v1/chat/completions","status":200,"duration_ms":12,"ttfb_ms":3,"stream":false,"replay_of":null,)"
    R"("chain":[{"key":"k0","status":429,"verdict":"cool","reason":"429 Retry-After","ms":3},)"
    R"({"key":"k1","status":200,"verdict":"ok","reason":"","ms":5}],"usage":null,"error":""})";

TEST(CaptureText, ALogLineHasIdTimePoolModelStatusChainAndDuration) {
  EXPECT_EQ(capture_log_line(parse(k_summary)),
            "  12  2026-12-02 23:20:20.303  default  gpt-4o  POST /v1/chat/completions  200  "
            "k0:429 cool, k1:200 ok  12ms");
}

TEST(CaptureText, PrettyJsonIndentsByTwoSpaces) {
  EXPECT_EQ(pretty_json(parse(R"({"a":[1,{"b":"c"}],"d":{},"e":[]})")),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"c\"\n    }\n  ],\n  \"d\": {},\n  \"e\": []\n}");
}

TEST(CaptureText, EventsArePrintedOnePerLineWithoutComments) {
  EXPECT_EQ(event_lines(": ping\n\nevent: delta\r\ndata: {\"a\":1}\r\n\r\ndata: [DONE]\n\n"),
            "event: delta data: {\"a\":1}\ndata: [DONE]\n");
}

TEST(CaptureText, ShowPrintsTheChainHeadsAndABinaryBodyAsANote) {
  util::Json entry = parse(k_summary);
  entry.set("request", parse(R"({"head":[["content-type","application/json"]],"body":"{\"x\":1}",)"
                             R"("body_base64":false,"body_truncated":true,"body_size":5000})"));
  entry.set("response", parse(R"({"head":[],"body":"H4sI","body_base64":true,"body_truncated":false,)"
                              R"("body_size":3,"events":false})"));
  std::string text = capture_show_text(entry);
  EXPECT_NE(text.find("chain: k0:429 cool (429 Retry-After) 3ms, k1:200 ok 5ms\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("> request\ncontent-type: application/json\n\n{\n  \"x\": 1\n}\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(body cut: the first 7 of 5000 bytes were kept)"), std::string::npos) << text;
  EXPECT_NE(text.find("not text; `--json` has them in base64"), std::string::npos) << text;
}

TEST(CaptureText, ControlCharactersCannotReachTheTerminal) {
  EXPECT_EQ(printable("a\x1b[2Jb\tc\nd\x7f"), "a?[2Jb\tc\nd?");
}

} // namespace
} // namespace keyshim::cli
