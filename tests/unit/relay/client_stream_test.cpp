// The framing a committed response gets towards the client, and how a
// piece reaches it: at once when the socket has room, else when it drains.
#include "relay/client_stream.hpp"

#include "support/socket_pair.hpp"

#include <gtest/gtest.h>

#include <string>

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

TEST(ClientStreamWrite, APieceTheSocketTakesAtOnceIsDoneBeforeWriteReturns) {
  asio::io_context ioc{1};
  test::SocketPair pair(ioc);
  ClientStream out(pair.near);
  bool written = false;
  out.write("data: 1\n\n", false, [&](const ErrorCode& ec) { written = !ec; });
  EXPECT_TRUE(written) << "no turn of the event loop for a write the socket took whole";
  EXPECT_EQ(pair.read(), "9\r\ndata: 1\n\n\r\n");
}

TEST(ClientStreamWrite, APieceTooBigForTheSocketIsWrittenWholeOnceTheClientReads) {
  asio::io_context ioc{1};
  test::SocketPair pair(ioc);
  ClientStream out(pair.near);
  const std::string big(4 << 20, 'x'); // far more than a socket buffer holds
  bool written = false;
  ErrorCode result;
  out.write(big, true, [&](const ErrorCode& ec) {
    written = true;
    result = ec;
  });
  EXPECT_FALSE(written) << "the rest waits for room";
  std::string got;
  for (int round = 0; round < 100000 && !written; ++round) {
    got += pair.read(); // runs the pending write's handlers, then takes what arrived
  }
  got += pair.read();
  ASSERT_TRUE(written);
  EXPECT_FALSE(result) << result.message();
  EXPECT_EQ(got.size(), big.size() + 15);
  EXPECT_EQ(got, "400000\r\n" + big + "\r\n0\r\n\r\n");
}

} // namespace
} // namespace keyshim::relay
