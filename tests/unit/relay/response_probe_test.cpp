// What an attempt reads before the commit point, fed piece by piece: an error
// body kept to classify, a stream held until its first event.
#include "relay/response_probe.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::relay {
namespace {

ResponseProbe plain_stream() {
  return ResponseProbe::event_stream(policy::make_decoder(""));
}

TEST(ResponseProbe, AnErrorBodyIsReadToItsEndAndJudgedWhole) {
  ResponseProbe probe = ResponseProbe::error_body(policy::make_decoder(""));
  EXPECT_TRUE(probe.wants_more(R"({"error":{"type":)", false));
  EXPECT_FALSE(probe.wants_more(R"("rate_limit"}})", true));
  EXPECT_EQ(probe.judged(), R"({"error":{"type":"rate_limit"}})");
  EXPECT_EQ(probe.held(), R"({"error":{"type":"rate_limit"}})");
  EXPECT_FALSE(probe.is_stream());
}

TEST(ResponseProbe, AnErrorBodyIsKeptUpToItsLimitAndNoFurther) {
  ResponseProbe probe = ResponseProbe::error_body(policy::make_decoder(""));
  std::string piece(64 * 1024, 'x');
  int pieces = 0;
  while (probe.wants_more(piece, false)) {
    ASSERT_LT(++pieces, 100) << "the probe never stopped asking";
  }
  EXPECT_EQ(pieces + 1, 16); // 16 pieces of 64 KiB fill 1 MiB
  EXPECT_EQ(probe.held().size(), ResponseProbe::k_error_body_limit);
}

TEST(ResponseProbe, AnErrorBodyInAnUnknownEncodingIsJudgedAsItCame) {
  ResponseProbe probe = ResponseProbe::error_body(policy::make_decoder("gzip, br"));
  EXPECT_FALSE(probe.wants_more("opaque", true));
  EXPECT_EQ(probe.judged(), "opaque");
}

TEST(ResponseProbe, AStreamIsHeldUntilItsFirstEventIsComplete) {
  ResponseProbe probe = plain_stream();
  EXPECT_FALSE(probe.holding());
  EXPECT_TRUE(probe.wants_more(": ping\n\n", false)); // a comment is no event
  EXPECT_TRUE(probe.holding());
  EXPECT_TRUE(probe.wants_more("data: {\"a\":", false));
  EXPECT_FALSE(probe.wants_more("1}\n\ndata: next", false));
  EXPECT_EQ(probe.judged(), ": ping\n\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(probe.held(), ": ping\n\ndata: {\"a\":1}\n\ndata: next") << "every held byte is relayed";
}

TEST(ResponseProbe, AStreamEndingBeforeAnyEventIsRelayedUnjudged) {
  ResponseProbe probe = plain_stream();
  EXPECT_FALSE(probe.wants_more(": ping\n\n", true));
  EXPECT_EQ(probe.judged(), std::nullopt);
  EXPECT_EQ(probe.held(), ": ping\n\n");
}

TEST(ResponseProbe, AStreamWithoutAnEventWithinItsLimitIsRelayedUnjudged) {
  ResponseProbe probe = plain_stream();
  std::string comment = ": " + std::string(1021, 'p') + "\n"; // 1 KiB, never an event's end
  int pieces = 0;
  while (probe.wants_more(comment, false)) {
    ASSERT_LT(++pieces, 1000) << "the probe never stopped asking";
  }
  EXPECT_EQ(probe.held().size(), ResponseProbe::k_stream_limit);
  EXPECT_EQ(probe.judged(), std::nullopt);
}

TEST(ResponseProbe, AStreamThatCannotBeDecodedIsRelayedUnjudged) {
  ResponseProbe probe = ResponseProbe::event_stream(policy::make_decoder("gzip"));
  EXPECT_FALSE(probe.wants_more("this is not gzip at all", false));
  EXPECT_EQ(probe.judged(), std::nullopt);
  EXPECT_EQ(probe.held(), "this is not gzip at all");
}

} // namespace
} // namespace keyshim::relay
