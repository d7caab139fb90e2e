#include "relay/ws_frames.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace keyshim::relay {
namespace {

using Result = WsFrameScanner::Result;

// One frame as a peer writes it: FIN and opcode, a payload of `size` bytes
// ('x'), masked when it comes from a client.
std::string frame(unsigned opcode, std::uint64_t size, bool fin = true, bool masked = false) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  unsigned mask_bit = masked ? 0x80 : 0;
  if (size < 126) {
    out.push_back(static_cast<char>(mask_bit | size));
  } else if (size <= 0xffff) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(size >> 8));
    out.push_back(static_cast<char>(size & 0xff));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((size >> shift) & 0xff));
    }
  }
  if (masked) {
    out += "\x01\x02\x03\x04";
  }
  out.append(size, 'x');
  return out;
}

TEST(WsFrameScanner, FindsTheBoundaryAfterEachWholeFrame) {
  WsFrameScanner scanner;
  std::string text = frame(0x1, 5, true, true);
  EXPECT_EQ(scanner.feed(text.substr(0, 3)), Result::ok);
  EXPECT_FALSE(scanner.at_boundary());
  EXPECT_EQ(scanner.feed(text.substr(3)), Result::ok);
  EXPECT_TRUE(scanner.at_boundary());
  EXPECT_EQ(scanner.messages(), 1U);
}

TEST(WsFrameScanner, ReadsSixteenAndSixtyFourBitLengthsFedOneByteAtATime) {
  WsFrameScanner scanner;
  std::string bytes = frame(0x2, 300) + frame(0x2, 70000, true, true);
  for (char byte : bytes) {
    ASSERT_EQ(scanner.feed(std::string_view(&byte, 1)), Result::ok);
  }
  EXPECT_TRUE(scanner.at_boundary());
  EXPECT_EQ(scanner.messages(), 2U);
}

TEST(WsFrameScanner, CountsAFragmentedMessageOnceAndAllowsPingsBetweenItsFragments) {
  WsFrameScanner scanner;
  std::string bytes = frame(0x1, 10, false) + frame(0x9, 4) + frame(0x0, 10, false) + frame(0x0, 0, true);
  EXPECT_EQ(scanner.feed(bytes), Result::ok);
  EXPECT_EQ(scanner.messages(), 1U);
  EXPECT_FALSE(scanner.close_seen());
}

TEST(WsFrameScanner, RefusesAMessageWhoseFragmentsTogetherExceedTheLimit) {
  WsFrameScanner scanner(100);
  EXPECT_EQ(scanner.feed(frame(0x2, 60, false)), Result::ok);
  EXPECT_EQ(scanner.feed(frame(0x0, 41, true).substr(0, 2)), Result::too_big);
  EXPECT_EQ(scanner.feed("more"), Result::too_big); // stays failed
}

TEST(WsFrameScanner, AllowsAMessageOfExactlyTheLimitAndANewMessageAfterIt) {
  WsFrameScanner scanner(100);
  EXPECT_EQ(scanner.feed(frame(0x2, 60, false) + frame(0x0, 40, true)), Result::ok);
  EXPECT_EQ(scanner.feed(frame(0x1, 100)), Result::ok);
  EXPECT_EQ(scanner.messages(), 2U);
}

TEST(WsFrameScanner, RefusesALongOrFragmentedControlFrameAndAnImpossibleLength) {
  EXPECT_EQ(WsFrameScanner().feed(frame(0x9, 126)), Result::malformed);
  EXPECT_EQ(WsFrameScanner().feed(frame(0x8, 2, false)), Result::malformed);
  std::string huge("\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 10);
  EXPECT_EQ(WsFrameScanner().feed(huge), Result::malformed);
}

TEST(WsFrameScanner, NotesACloseFrame) {
  WsFrameScanner scanner;
  EXPECT_EQ(scanner.feed(ws_close_frame(1000, "bye", true)), Result::ok);
  EXPECT_TRUE(scanner.close_seen());
  EXPECT_TRUE(scanner.at_boundary());
}

TEST(WsCloseFrame, IsUnmaskedTowardsTheClient) {
  EXPECT_EQ(ws_close_frame(1001, "bye", false), std::string("\x88\x05\x03\xe9"
                                                            "bye",
                                                            7));
}

TEST(WsCloseFrame, IsMaskedTowardsTheUpstream) {
  std::string frame = ws_close_frame(1001, "", true, 0x01020304);
  ASSERT_EQ(frame.size(), 8U);
  EXPECT_EQ(static_cast<unsigned char>(frame[1]), 0x82U);
  EXPECT_EQ(frame.substr(2, 4), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(static_cast<unsigned char>(frame[6]), 0x03U ^ 0x01U);
  EXPECT_EQ(static_cast<unsigned char>(frame[7]), 0xe9U ^ 0x02U);
}

TEST(WsCloseFrame, CutsTheReasonToWhatAControlFrameHolds) {
  std::string frame = ws_close_frame(1000, std::string(300, 'r'), false);
  EXPECT_EQ(frame.size(), 2U + 125U);
}

} // namespace
} // namespace keyshim::relay

namespace keyshim::relay {
namespace {

std::string text_frame(std::string_view payload, bool fin = true, unsigned opcode = 0x1) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  out.push_back(static_cast<char>(payload.size()));
  out += payload;
  return out;
}

TEST(WsFrameScannerCapture, CopiesEachWholeTextMessageAcrossFragmentsAndPings) {
  WsFrameScanner scanner;
  scanner.capture_texts(1024);
  std::string bytes = text_frame("{\"type\":", false) + text_frame("p", true, 0x9) +
                      text_frame("\"error\"}", true, 0x0) + text_frame("second");
  ASSERT_EQ(scanner.feed(bytes.substr(0, 5)), WsFrameScanner::Result::ok);
  ASSERT_EQ(scanner.feed(bytes.substr(5)), WsFrameScanner::Result::ok);
  EXPECT_EQ(scanner.take_texts(), (std::vector<std::string>{"{\"type\":\"error\"}", "second"}));
  EXPECT_TRUE(scanner.take_texts().empty());
}

TEST(WsFrameScannerCapture, SkipsBinaryCompressedMaskedAndOverlongMessages) {
  WsFrameScanner scanner;
  scanner.capture_texts(8);
  std::string compressed = text_frame("zz");
  compressed[0] = static_cast<char>(0xc1); // FIN + RSV1 + text
  std::string bytes =
      text_frame("bin", true, 0x2) + compressed + text_frame("far too long") + text_frame("ok");
  ASSERT_EQ(scanner.feed(bytes), WsFrameScanner::Result::ok);
  EXPECT_EQ(scanner.take_texts(), (std::vector<std::string>{"ok"}));
}

TEST(WsFrameScannerCapture, UnmasksAClientsTextMessage) {
  WsFrameScanner client_side;
  client_side.capture_texts(1024);
  std::string masked = frame(0x1, 3, true, true); // payload "xxx" masked with 01 02 03 04
  ASSERT_EQ(client_side.feed(masked), WsFrameScanner::Result::ok);
  std::string expected = {static_cast<char>('x' ^ 1), static_cast<char>('x' ^ 2), static_cast<char>('x' ^ 3)};
  EXPECT_EQ(client_side.take_texts(), (std::vector<std::string>{expected}));
  ASSERT_EQ(client_side.feed(ws_close_frame(1000, "", true)), WsFrameScanner::Result::ok);
  EXPECT_TRUE(client_side.take_texts().empty());
}

TEST(WsFrameScannerCapture, CopiesNothingUnlessAsked) {
  WsFrameScanner scanner;
  ASSERT_EQ(scanner.feed(text_frame("hello")), WsFrameScanner::Result::ok);
  EXPECT_TRUE(scanner.take_texts().empty());
}

} // namespace
} // namespace keyshim::relay
