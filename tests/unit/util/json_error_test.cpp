#include "util/json_error.hpp"

#include <gtest/gtest.h>

namespace keyshim::util {
namespace {

TEST(JsonError, WritesTheOpenAiErrorShapeWithEscapedText) {
  EXPECT_EQ(json_error_body("too \"big\"\n", "keyshim_bad_request", "http_431"),
            R"({"error":{"message":"too \"big\"\n","type":"keyshim_bad_request","code":"http_431"}})");
}

TEST(ApiErrorBody, WritesEachApisShapeWithItsWordsForTheStatus) {
  EXPECT_EQ(api_error_body(ErrorShape::openai, 404, "gone", "t", "c"), json_error_body("gone", "t", "c"));
  EXPECT_EQ(api_error_body(ErrorShape::anthropic, 404, "no \"x\"", "t", "c"),
            R"({"type":"error","error":{"type":"not_found_error","message":"no \"x\""}})");
  EXPECT_EQ(api_error_body(ErrorShape::anthropic, 529, "busy", "t", "c"),
            R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})");
  EXPECT_EQ(api_error_body(ErrorShape::google, 404, "gone", "t", "c"),
            R"({"error":{"code":404,"message":"gone","status":"NOT_FOUND"}})");
  EXPECT_EQ(api_error_body(ErrorShape::google, 502, "down", "t", "c"),
            R"({"error":{"code":502,"message":"down","status":"INTERNAL"}})");
}

} // namespace
} // namespace keyshim::util
