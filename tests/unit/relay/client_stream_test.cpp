// The framing a committed response gets towards the client.
#include "relay/client_stream.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

TEST(FramingFor, ResponsesWithoutABodyHaveNoFraming) {
  EXPECT_EQ(framing_for(http::verb::head, 11, 200, true), Framing::none);
  EXPECT_EQ(framing_for(http::verb::get, 11, 204, false), Framing::none);
  EXPECT_EQ(framing_for(http::verb::get, 11, 304, true), Framing::none);
}

TEST(FramingFor, TheUpstreamsContentLengthIsKept) {
  EXPECT_EQ(framing_for(http::verb::post, 11, 200, true), Framing::content_length);
  EXPECT_EQ(framing_for(http::verb::post, 10, 200, true), Framing::content_length);
}

TEST(FramingFor, AnUnknownLengthIsChunkedForHttp11AndEndedByCloseForHttp10) {
  EXPECT_EQ(framing_for(http::verb::post, 11, 200, false), Framing::chunked);
  EXPECT_EQ(framing_for(http::verb::post, 10, 200, false), Framing::close);
}

} // namespace
} // namespace keyshim::relay
