// Decoding the start of a compressed event stream: every supported encoding,
// any split of the input, streams flushed mid-way, the output cap, corruption.
#include "policy/stream_decoder.hpp"

#include "compression.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

namespace keyshim::policy {
namespace {

using test::Codec;
using test::compress;
using test::compress_pieces;
using test::Encoding;
using test::k_encodings;
using test::zstd_pieces;

constexpr std::size_t k_no_cap = std::size_t{1} << 30;

const std::string k_first_event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"
                                  "{\"id\":\"msg_01\",\"role\":\"assistant\",\"content\":[]}}\n\n";

// Enough events to decode to several times the decoders' 16 KiB scratch.
std::string later_events() {
  std::string text;
  for (int i = 0; i < 600; ++i) {
    text += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
            "{\"type\":\"text_delta\",\"text\":\"token " +
            std::to_string(i * 7919 % 1000) + "\"}}\n\n";
  }
  return text + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

const std::string k_later_events = later_events();
const std::string k_stream = k_first_event + k_later_events;

// Feeds `encoded` in pieces of `piece_size` bytes; every piece must be accepted.
std::string decode_in_pieces(const Encoding& encoding, std::string_view encoded, std::size_t piece_size,
                             std::size_t max_out = k_no_cap) {
  auto decoder = make_decoder(encoding.header);
  EXPECT_NE(decoder, nullptr);
  std::string out;
  for (std::size_t pos = 0; decoder && pos < encoded.size(); pos += piece_size) {
    EXPECT_TRUE(decoder->feed(encoded.substr(pos, piece_size), out, max_out)) << "at byte " << pos;
  }
  return out;
}

TEST(StreamDecoder, OnlyNoEncodingOrIdentityIsIdentity) {
  for (const char* name : {"", " ", "identity", "IDENTITY", " Identity\t"}) {
    EXPECT_TRUE(is_identity(name)) << '"' << name << '"';
  }
  for (const char* name : {"gzip", "identity, gzip", "identityx", "br", "x-identity"}) {
    EXPECT_FALSE(is_identity(name)) << name;
  }
}

TEST(StreamDecoder, EveryEncodingDecodesAnEventStreamExactly) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, k_stream);
    ASSERT_LT(encoded.size(), k_stream.size());
    EXPECT_EQ(decode_in_pieces(encoding, encoded, encoded.size()), k_stream);
  }
}

TEST(StreamDecoder, EveryEncodingDecodesWhenFedOneByteAtATime) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    EXPECT_EQ(decode_in_pieces(encoding, compress(encoding.codec, k_stream), 1), k_stream);
  }
}

TEST(StreamDecoder, EveryEncodingDecodesInteriorSplitsOfOddSizes) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, k_stream);
    for (std::size_t piece_size : {2, 3, 7, 100, 1000}) {
      EXPECT_EQ(decode_in_pieces(encoding, encoded, piece_size), k_stream) << "pieces of " << piece_size;
    }
  }
}

TEST(StreamDecoder, GzipFlushedAfterTheFirstEventYieldsThatEventAtOnce) {
  // A streaming server compresses the first event, flushes it onto the wire,
  // and only later produces the rest.
  std::vector<std::string> wire = compress_pieces(Codec::gzip, {k_first_event, k_later_events});
  auto decoder = make_decoder("gzip");
  std::string out;
  ASSERT_TRUE(decoder->feed(wire[0], out, k_no_cap));
  EXPECT_EQ(out, k_first_event);
  ASSERT_TRUE(decoder->feed(wire[1], out, k_no_cap));
  EXPECT_EQ(out, k_stream);
}

TEST(StreamDecoder, EveryEncodingFlushedAfterTheFirstEventYieldsThatEventByteByByte) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::vector<std::string> wire = compress_pieces(encoding.codec, {k_first_event, k_later_events});
    EXPECT_EQ(decode_in_pieces(encoding, wire[0], 1), k_first_event);
    EXPECT_EQ(decode_in_pieces(encoding, wire[0] + wire[1], 1), k_stream);
  }
}

TEST(StreamDecoder, OutputNeverExceedsMaxOut) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, k_stream);
    EXPECT_EQ(decode_in_pieces(encoding, encoded, encoded.size(), 100), k_stream.substr(0, 100));
    EXPECT_EQ(decode_in_pieces(encoding, encoded, 5, 20000), k_stream.substr(0, 20000));
  }
}

TEST(StreamDecoder, DecodingGoesOnAfterTheCallerDrainsTheOutput) {
  // The cap bounds `out`, not the stream: a caller that consumes what it read
  // keeps receiving the rest.
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, k_stream);
    auto decoder = make_decoder(encoding.header);
    std::string out;
    std::string seen;
    for (std::size_t pos = 0; pos < encoded.size(); pos += 64) {
      ASSERT_TRUE(decoder->feed(std::string_view(encoded).substr(pos, 64), out, 1 << 20));
      seen += out;
      out.clear();
    }
    EXPECT_EQ(seen, k_stream);
  }
}

// Collects what a decoder hands over, and the largest single hand-over.
class CollectingSink final : public DecodedSink {
public:
  void take(std::string_view decoded) override {
    text.append(decoded);
    largest = std::max(largest, decoded.size());
  }
  std::string text;
  std::size_t largest = 0;
};

TEST(StreamDecoder, DecodeHandsOverAPieceThatInflatesFarInScratchSizedRuns) {
  // 8 MiB of one repeated event compresses to a few KiB, so one received piece
  // can decode to megabytes; the sink still sees at most 16 KiB at a time.
  std::string big;
  while (big.size() < (std::size_t{8} << 20)) {
    big += k_first_event;
  }
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, big);
    ASSERT_LT(encoded.size(), std::size_t{64} << 10);
    auto decoder = make_decoder(encoding.header);
    CollectingSink sink;
    ASSERT_TRUE(decoder->decode(encoded, sink));
    EXPECT_TRUE(sink.text == big) << "decoded " << sink.text.size() << " of " << big.size() << " bytes";
    EXPECT_LE(sink.largest, std::size_t{16} << 10);
  }
}

TEST(StreamDecoder, CorruptInputFailsAndStaysFailed) {
  const std::vector<std::pair<std::string_view, std::string>> corrupt = {
      {"gzip", "GIF89a not gzip at all"},
      {"deflate", std::string("\x07\x00\x00\x00", 4)}, // raw block type 3 is reserved
      {"deflate", std::string("\x78\x9c\xff\xff\xff\xff", 6)},
      {"br", std::string(64, '\xff')},
      {"zstd", "not a zstd frame"},
  };
  for (const auto& [header, bytes] : corrupt) {
    SCOPED_TRACE(header);
    auto decoder = make_decoder(header);
    std::string out;
    EXPECT_FALSE(decoder->feed(bytes, out, k_no_cap));
    EXPECT_FALSE(decoder->feed(compress(Codec::gzip, k_first_event), out, k_no_cap));
  }
}

TEST(StreamDecoder, GzipWithAWrongChecksumFails) {
  std::string encoded = compress(Codec::gzip, k_stream);
  encoded[encoded.size() - 8] = static_cast<char>(encoded[encoded.size() - 8] ^ 0x01); // CRC-32
  auto decoder = make_decoder("gzip");
  std::string out;
  EXPECT_FALSE(decoder->feed(encoded, out, k_no_cap));
}

TEST(StreamDecoder, BytesAfterTheEndOfTheStreamAreIgnored) {
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.name);
    std::string encoded = compress(encoding.codec, k_stream) + "trailing junk\r\n";
    EXPECT_EQ(decode_in_pieces(encoding, encoded, encoded.size()), k_stream);
    EXPECT_EQ(decode_in_pieces(encoding, encoded, 1), k_stream);
  }
}

TEST(StreamDecoder, ZstdDecodesConcatenatedFrames) {
  std::string encoded = compress(Codec::zstd, k_first_event) + compress(Codec::zstd, k_later_events);
  const Encoding& zstd = k_encodings[4];
  EXPECT_EQ(decode_in_pieces(zstd, encoded, encoded.size()), k_stream);
  EXPECT_EQ(decode_in_pieces(zstd, encoded, 1), k_stream);
}

TEST(StreamDecoder, ZstdWindowLargerThanTheHttpLimitIsRefused) {
  // RFC 9659 caps zstd windows at 8 MiB for HTTP; a 16 MiB one is refused
  // instead of allocated. Two pieces leave the content size unknown, so the
  // frame keeps the window it was given.
  std::vector<std::string> wire = zstd_pieces({k_first_event, k_later_events}, 24);
  auto decoder = make_decoder("zstd");
  std::string out;
  EXPECT_FALSE(decoder->feed(wire[0] + wire[1], out, k_no_cap));
  EXPECT_EQ(out, "");
}

TEST(StreamDecoder, IdentityPassesBytesThroughUpToMaxOut) {
  for (std::string_view header : {"", "identity"}) {
    auto decoder = make_decoder(header);
    ASSERT_NE(decoder, nullptr);
    std::string out;
    EXPECT_TRUE(decoder->feed("data: {\"id\":1}\n\n", out, 10));
    EXPECT_TRUE(decoder->feed("data: more\n\n", out, 10));
    EXPECT_EQ(out, "data: {\"id");
  }
}

TEST(StreamDecoder, UnknownAndStackedEncodingsHaveNoDecoder) {
  for (std::string_view header : {"compress", "x-compress", "lzma", "gzipx", "gzip, br", "br,gzip",
                                  "deflate, identity", "identity, gzip", "gzip;q=1", "*"}) {
    EXPECT_EQ(make_decoder(header), nullptr) << header;
  }
}

TEST(StreamDecoder, EncodingNamesIgnoreCaseAndSurroundingWhitespace) {
  for (std::string_view header :
       {"GZIP", " gzip ", "\tX-GZip\r\n", "Deflate", "  BR", "Zstd\t", "IDENTITY", "  "}) {
    EXPECT_NE(make_decoder(header), nullptr) << header;
  }
  auto decoder = make_decoder(" Br ");
  std::string out;
  ASSERT_TRUE(decoder->feed(compress(Codec::brotli, k_first_event), out, k_no_cap));
  EXPECT_EQ(out, k_first_event);
}

} // namespace
} // namespace keyshim::policy
