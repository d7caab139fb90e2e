#include "util/json_error.hpp"

#include <gtest/gtest.h>

namespace keyshim::util {
namespace {

TEST(JsonError, WritesTheOpenAiErrorShapeWithEscapedText) {
  EXPECT_EQ(json_error_body("too \"big\"\n", "keyshim_bad_request", "http_431"),
            R"({"error":{"message":"too \"big\"\n","type":"keyshim_bad_request","code":"http_431"}})");
}

} // namespace
} // namespace keyshim::util
