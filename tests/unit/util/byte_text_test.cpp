#include "util/byte_text.hpp"

#include <gtest/gtest.h>

namespace keyshim::util {
namespace {

TEST(ByteText, RecognisesWellFormedUtf8) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain ascii"));
  EXPECT_TRUE(is_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_utf8("\xc3"));             // cut
  EXPECT_FALSE(is_utf8("\xc0\xaf"));         // overlong
  EXPECT_FALSE(is_utf8("\xed\xa0\x80"));     // a surrogate
  EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80")); // past U+10FFFF
  EXPECT_FALSE(is_utf8("\x1f\x8b\x08\x00\xff"));
}

TEST(ByteText, APrefixNeverEndsInsideASequence) {
  std::string text = "a\xe2\x82\xac"; // a€
  EXPECT_EQ(utf8_prefix(text, 1), 1u);
  EXPECT_EQ(utf8_prefix(text, 2), 1u);
  EXPECT_EQ(utf8_prefix(text, 3), 1u);
  EXPECT_EQ(utf8_prefix(text, 4), 4u);
  EXPECT_EQ(utf8_prefix(text, 10), 4u);
  EXPECT_EQ(utf8_prefix("abc", 2), 2u);
}

TEST(ByteText, Base64MatchesRfc4648) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\x00", 2)), "/wA=");
}

} // namespace
} // namespace keyshim::util
