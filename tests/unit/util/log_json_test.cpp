// --log-format json: every line is one JSON object that a log shipper can
// read, whatever bytes the logged text carries.
#include "support/log_capture.hpp"
#include "util/json.hpp"
#include "util/log.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace keyshim::util {
namespace {

std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    JsonError error;
    std::optional<Json> json = parse_json(line, &error);
    EXPECT_TRUE(json) << "at " << error.offset << ": " << error.message << " in " << line;
    lines.push_back(json.value_or(Json()));
  }
  return lines;
}

TEST(JsonLog, AMessageWithInvalidUtf8IsStillValidJson) {
  test::LogCapture capture(LogLevel::info, LogFormat::json);
  log_warn("upstream said \"{}\"", "caf\xE9\n\x01 \xFF");
  std::string text = capture.text();
  EXPECT_EQ(text.find('\xE9'), std::string::npos);
  EXPECT_EQ(text.find('\xFF'), std::string::npos);
  std::vector<Json> lines = json_lines(text);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].string_at("level"), "warn");
  EXPECT_EQ(lines[0].string_at("msg"), "upstream said \"caf\xEF\xBF\xBD\n\x01 \xEF\xBF\xBD\"");
  EXPECT_TRUE(lines[0].string_at("ts"));
}

TEST(JsonLog, ARecordWritesTsAndLevelThenItsFieldsInOrder) {
  test::LogCapture capture(LogLevel::info, LogFormat::json);
  Json fields;
  fields.add("path", Json::make_string("/v1/\xC3("))
      .add("status", Json::make_number(200))
      .add("ttfb_ms", Json())
      .add("stream", Json::make_bool(true));
  Logger::instance().record(LogLevel::info, "ignored in JSON", fields);
  std::string text = capture.text();
  std::size_t ts_end = text.find("\",\"level\"");
  ASSERT_NE(ts_end, std::string::npos);
  EXPECT_EQ(text.rfind("{\"ts\":\"", 0), 0u);
  EXPECT_EQ(text.substr(ts_end), "\",\"level\":\"info\",\"path\":\"/v1/\xEF\xBF\xBD(\",\"status\":200,"
                                 "\"ttfb_ms\":null,\"stream\":true}\n");
  EXPECT_EQ(json_lines(text).size(), 1u);
}

TEST(JsonLog, TextFormatIsUnchanged) {
  test::LogCapture capture(LogLevel::info, LogFormat::text);
  Logger::instance().record(LogLevel::info, "POST /v1 200", Json().add("status", Json::make_number(200)));
  EXPECT_NE(capture.text().find(" POST /v1 200\n"), std::string::npos);
  EXPECT_EQ(capture.text().find('{'), std::string::npos);
}

} // namespace
} // namespace keyshim::util
