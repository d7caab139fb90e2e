// util::Json, its reader and writer (nlohmann-json behind util/json.hpp):
// provider bodies in, /status, error bodies and log lines out.
#include "util/json.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace keyshim::util {
namespace {

Json parse_ok(std::string_view text) {
  JsonError error;
  std::optional<Json> json = parse_json(text, &error);
  EXPECT_TRUE(json) << "at " << error.offset << ": " << error.message << " in " << text;
  return json ? *json : Json();
}

TEST(Json, ParsesScalars) {
  EXPECT_TRUE(parse_ok("null").is_null());
  EXPECT_TRUE(parse_ok("true").as_bool());
  EXPECT_FALSE(parse_ok("false").as_bool(true));
  EXPECT_EQ(parse_ok("42").as_number(), 42);
  EXPECT_EQ(parse_ok("-0.5").as_number(), -0.5);
  EXPECT_EQ(parse_ok("1e3").as_number(), 1000);
  EXPECT_EQ(parse_ok("2.5E-1").as_number(), 0.25);
  EXPECT_EQ(parse_ok("\"hi\"").as_string(), "hi");
}

TEST(Json, ParsesNestedObjectsAndArrays) {
  Json json = parse_ok(R"( {"status":"ok","keys":{"total":3,"available":2},"list":[1,"two",null,[true]]} )");
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json.string_at("status"), "ok");
  const Json* keys = json.find("keys");
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->find("total")->as_number(), 3);
  const Json::Array& list = json.find("list")->items();
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[1].as_string(), "two");
  EXPECT_TRUE(list[2].is_null());
  EXPECT_TRUE(list[3].items()[0].as_bool());
  EXPECT_EQ(json.find("missing"), nullptr);
}

TEST(Json, EmptyContainers) {
  EXPECT_TRUE(parse_ok("{}").is_object());
  EXPECT_TRUE(parse_ok("[ ]").items().empty());
  EXPECT_TRUE(parse_ok("{ }").members().empty());
}

TEST(Json, KeepsMemberOrderAndFindsTheFirstDuplicate) {
  Json json = parse_ok(R"({"b":1,"a":2,"b":3})");
  ASSERT_EQ(json.members().size(), 3u);
  EXPECT_EQ(json.members()[0].first, "b");
  EXPECT_EQ(json.members()[1].first, "a");
  EXPECT_EQ(json.find("b")->as_number(), 1);
}

TEST(Json, DecodesEscapes) {
  EXPECT_EQ(parse_ok(R"("a\"b\\c\/d\b\f\n\r\t")").as_string(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parse_ok(R"("\u0041\u00e9\u20ac")").as_string(), "A\xC3\xA9\xE2\x82\xAC");
}

TEST(Json, JoinsSurrogatePairsIntoUtf8) {
  EXPECT_EQ(parse_ok(R"("\ud83d\ude00")").as_string(), "\xF0\x9F\x98\x80"); // U+1F600
  EXPECT_EQ(parse_ok(R"("\uD834\uDD1E")").as_string(), "\xF0\x9D\x84\x9E"); // U+1D11E
}

TEST(Json, PassesRawUtf8Through) {
  EXPECT_EQ(parse_ok("\"caf\xC3\xA9\"").as_string(), "caf\xC3\xA9");
}

TEST(Json, RejectsMalformedInput) {
  for (const char* text : {"",
                           " ",
                           "{",
                           "[1,]",
                           "{\"a\":}",
                           "{\"a\" 1}",
                           "{a:1}",
                           "[1 2]",
                           "tru",
                           "nul",
                           "01",
                           "1.",
                           ".5",
                           "-",
                           "1e",
                           "+1",
                           "\"unterminated",
                           "\"bad \\x escape\"",
                           "\"\\u12\"",
                           "\"tab\there\"",
                           "{} extra",
                           "[1]]",
                           "NaN",
                           "Infinity",
                           "'single'"}) {
    JsonError error;
    EXPECT_FALSE(parse_json(text, &error)) << text;
    EXPECT_FALSE(error.message.empty()) << text;
  }
}

TEST(Json, ReportsWhereTheProblemIs) {
  JsonError error;
  EXPECT_FALSE(parse_json(R"({"a": 1, "b": x})", &error));
  EXPECT_EQ(error.offset, 14u);
  EXPECT_EQ(error.message, "syntax error while parsing value - invalid literal");
}

TEST(Json, EnforcesTheDepthLimit) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  JsonError error;
  EXPECT_FALSE(parse_json(deep, &error));
  EXPECT_EQ(error.message, "nesting too deep");
  EXPECT_TRUE(parse_json(deep, nullptr, 200));
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_TRUE(parse_json(ok));
  EXPECT_FALSE(parse_json("[" + ok + "]"));
}

TEST(Json, ReportsWhereNestingGetsTooDeep) {
  std::string deep = R"({"a":"[[[[","b":)" + std::string(3, '[') + std::string(3, ']') + "}";
  JsonError error;
  EXPECT_FALSE(parse_json(deep, &error, 2));
  EXPECT_EQ(error.message, "nesting too deep");
  EXPECT_EQ(error.offset, deep.find('[', 12) + 1); // brackets in a string do not count
}

TEST(Json, HugeNestingDoesNotCrash) {
  std::string deep(100000, '[');
  EXPECT_FALSE(parse_json(deep));
  std::string objects;
  for (int i = 0; i < 100000; ++i) {
    objects += R"({"a":)";
  }
  EXPECT_FALSE(parse_json(objects + "1" + std::string(100000, '}')));
}

TEST(Json, TypeMismatchesReturnFallbacks) {
  Json json = parse_ok(R"({"n":1,"s":"x"})");
  EXPECT_EQ(json.find("s")->as_number(7), 7);
  EXPECT_EQ(json.find("n")->as_string(), "");
  EXPECT_FALSE(json.string_at("n"));
  EXPECT_TRUE(json.items().empty());
  EXPECT_EQ(parse_ok("[1]").find("n"), nullptr);
}

TEST(Json, DumpsCompactJson) {
  Json json;
  json.set("status", Json::make_string("ok"));
  Json keys;
  keys.set("total", Json::make_number(3));
  keys.set("ratio", Json::make_number(0.5));
  json.set("keys", keys);
  Json list = Json::make_array();
  list.push_back(Json::make_bool(true));
  list.push_back(Json());
  list.push_back(Json::make_string("a\"b\n"));
  json.set("list", list);
  EXPECT_EQ(json.dump(), R"({"status":"ok","keys":{"total":3,"ratio":0.5},"list":[true,null,"a\"b\n"]})");
}

TEST(Json, SetReplacesAnExistingMember) {
  Json json;
  json.set("a", Json::make_number(1));
  json.set("a", Json::make_number(2));
  EXPECT_EQ(json.dump(), R"({"a":2})");
}

TEST(Json, DumpThenParseRoundTrips) {
  std::string text = R"({"label":"team","until":"2026-11-29T12:00:30Z","ok":12,"err":-3,"f":1.25,)"
                     R"("tags":["x","\u00e9"],"n":null})";
  Json json = parse_ok(text);
  Json again = parse_ok(json.dump());
  EXPECT_EQ(again.dump(), json.dump());
  EXPECT_EQ(again.find("tags")->items()[1].as_string(), "\xC3\xA9");
  EXPECT_EQ(again.find("err")->as_number(), -3);
}

// Counters pass 2^53 (tokens add up); a double would print them rounded,
// as floats, and a reader would get another number.
TEST(Json, UnsignedIntegersAboveTwoToThe53DumpExactly) {
  Json json;
  json.add("max", Json::make_number(std::numeric_limits<std::uint64_t>::max()));
  json.add("odd", Json::make_number(std::uint64_t{9007199254740993})); // 2^53 + 1
  json.add("zero", Json::make_unsigned(0));
  json.add("negative", Json::make_number(-5));
  EXPECT_EQ(json.dump(), R"({"max":18446744073709551615,"odd":9007199254740993,"zero":0,"negative":-5})");
  EXPECT_EQ(json.find("max")->as_unsigned(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(json.find("negative")->as_unsigned(), std::nullopt);
  EXPECT_EQ(json.find("odd")->as_number(), 9007199254740992.0); // the double is the nearest one
}

TEST(Json, ParsedUnsignedIntegersStayExact) {
  Json json = parse_ok(R"({"max":18446744073709551615,"odd":9007199254740993,"f":2.5,"neg":-1})");
  EXPECT_EQ(json.find("max")->as_unsigned(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(json.find("odd")->as_unsigned(), std::uint64_t{9007199254740993});
  EXPECT_EQ(json.find("f")->as_unsigned(), std::nullopt);
  EXPECT_EQ(json.find("neg")->as_unsigned(), std::nullopt);
  EXPECT_EQ(json.dump(), R"({"max":18446744073709551615,"odd":9007199254740993,"f":2.5,"neg":-1})");
}

TEST(Json, ControlCharactersAreEscapedOnOutput) {
  Json json = Json::make_string(std::string("a\x01z", 3));
  std::optional<Json> back = parse_json(json.dump());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->as_string(), std::string("a\x01z", 3));
}

// Found by probing the hand-written reader: each of these cost the whole
// document, so one odd value in a usage report or error body hid the rest.
TEST(Json, NumbersBeyondADoubleClampInsteadOfRejectingTheDocument) {
  Json json =
      parse_ok(R"({"big":1e400,"small":-1E+999,"digits":)" + std::string(400, '9') + R"(,"after":2})");
  EXPECT_EQ(json.find("big")->as_number(), std::numeric_limits<double>::max());
  EXPECT_EQ(json.find("small")->as_number(), std::numeric_limits<double>::lowest());
  EXPECT_EQ(json.find("digits")->as_number(), std::numeric_limits<double>::max());
  EXPECT_EQ(json.find("after")->as_number(), 2);
  EXPECT_EQ(parse_ok("[1e400]").dump(), "[1.7976931348623157e+308]");
}

TEST(Json, NumbersTooSmallForADoubleReadAsZero) {
  EXPECT_EQ(parse_ok("1e-400").as_number(), 0);
  EXPECT_EQ(parse_ok(R"({"a":[-1e-400,0.5]})").find("a")->items()[1].as_number(), 0.5);
}

TEST(Json, LoneSurrogatesBecomeTheReplacementCharacter) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(parse_ok(R"("a\ud800b")").as_string(), "a" + fffd + "b");
  EXPECT_EQ(parse_ok(R"("\udc00")").as_string(), fffd);
  EXPECT_EQ(parse_ok(R"("\ud83d\u0041")").as_string(), fffd + "A");
  EXPECT_EQ(parse_ok(R"("\ud83d\ud83d\ude00")").as_string(), fffd + "\xF0\x9F\x98\x80");
  // An escaped backslash before "ud800" is no escape; a pair stays a pair.
  Json json = parse_ok(R"(["\\ud800","\ud83d\ude00","\ud800",1e400])");
  EXPECT_EQ(json.items()[0].as_string(), "\\ud800");
  EXPECT_EQ(json.items()[1].as_string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(json.items()[2].as_string(), fffd);
  EXPECT_EQ(json.items()[3].as_number(), std::numeric_limits<double>::max());
}

TEST(Json, InvalidUtf8InAStringIsReplacedOnRead) {
  Json json = parse_ok("{\"msg\":\"caf\xE9 \xFF\",\"n\":1}");
  EXPECT_EQ(json.string_at("msg"), "caf\xEF\xBF\xBD \xEF\xBF\xBD");
  EXPECT_EQ(json.find("n")->as_number(), 1);
}

TEST(Json, ErrorsAfterARepairPointIntoTheOriginalText) {
  std::string text = "[\"\xFF\xFF\xFF\", 1e400, x]";
  JsonError error;
  EXPECT_FALSE(parse_json(text, &error));
  EXPECT_EQ(error.offset, text.find('x'));
}

TEST(Json, DumpReplacesInvalidUtf8) {
  Json json;
  json.set("a\xFF", Json::make_string("b\xC3(\xF0\x9F"));
  std::string text = json.dump();
  EXPECT_EQ(text, "{\"a\xEF\xBF\xBD\":\"b\xEF\xBF\xBD(\xEF\xBF\xBD\"}");
  EXPECT_TRUE(parse_json(text));
}

TEST(Json, DumpWritesNonFiniteNumbersAsNull) {
  Json list = Json::make_array({Json::make_number(std::numeric_limits<double>::infinity()),
                                Json::make_number(std::numeric_limits<double>::quiet_NaN()),
                                Json::make_number(-0.0), Json::make_number(1e20), Json::make_number(0.1)});
  EXPECT_EQ(list.dump(), "[null,null,0,1e+20,0.1]");
}

TEST(Json, DumpKeepsParsedDuplicateNamesInOrder) {
  EXPECT_EQ(parse_ok(R"({"b":1,"a":2,"b":3})").dump(), R"({"b":1,"a":2,"b":3})");
}

TEST(Json, SettingsReaderSkipsCommentsThatTheStrictReaderRefuses) {
  const std::string text = "{\n  // a line comment\n  \"a\": 1, /* a block */ \"b\": [true]\n}";
  EXPECT_FALSE(parse_json(text));
  std::optional<Json> settings = parse_json_with_comments(text);
  ASSERT_TRUE(settings);
  EXPECT_EQ(settings->dump(), R"({"a":1,"b":[true]})");
  JsonError error;
  EXPECT_FALSE(parse_json_with_comments("{\"a\": }", &error));
  EXPECT_FALSE(error.message.empty());
}

} // namespace
} // namespace keyshim::util
