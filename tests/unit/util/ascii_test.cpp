#include "util/ascii.hpp"

#include <gtest/gtest.h>

namespace keyshim::util {
namespace {

TEST(Ascii, LowercasesAsciiOnlyAndLeavesUtf8Alone) {
  EXPECT_EQ(to_lower("Content-TYPE caf\xc3\x89"), "content-type caf\xc3\x89");
}

TEST(Ascii, ComparesIgnoringCase) {
  EXPECT_TRUE(iequals("X-Api-Key", "x-api-key"));
  EXPECT_FALSE(iequals("x-api-key", "x-api-keys"));
  EXPECT_FALSE(iequals("a", "b"));
}

TEST(Ascii, TrimsSpacesTabsAndLineEnds) {
  EXPECT_EQ(trim(" \t value \r\n"), "value");
  EXPECT_EQ(trim(" \t\r\n"), "");
  EXPECT_EQ(trim("in ner"), "in ner");
}

} // namespace
} // namespace keyshim::util
