// The usage meter reads what the relay passes, in whatever pieces the network
// delivers: every fixture must count the same whole, byte by byte, in random
// pieces, with any line ending, and compressed by any supported encoding.
#include "policy/usage_meter.hpp"

#include "compression.hpp"
#include "usage_fixtures.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace keyshim::policy {
namespace {

using test::Codec;
using test::Encoding;
using test::k_encodings;
using test::k_usage_fixtures;
using test::meter_pieces;
using test::meter_whole;
using test::usage_body;

// `body` cut into pieces of random sizes from 1 to `max_piece` (fixed seed).
std::vector<std::string_view> random_body_pieces(std::string_view body, std::size_t max_piece,
                                                 unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::size_t> size(1, max_piece);
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0; pos < body.size();) {
    std::size_t take = std::min(size(random), body.size() - pos);
    pieces.push_back(body.substr(pos, take));
    pos += take;
  }
  return pieces;
}

std::vector<std::string_view> byte_pieces(std::string_view body) {
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0; pos < body.size(); ++pos) {
    pieces.push_back(body.substr(pos, 1));
  }
  return pieces;
}

// Checks that `body` counts `expected` fed whole, byte by byte and in random pieces.
void expect_any_split_counts(std::string_view content_type, std::string_view encoding, std::string_view body,
                             const Usage& expected) {
  EXPECT_EQ(meter_pieces(content_type, encoding, {body}), expected) << "whole";
  EXPECT_EQ(meter_pieces(content_type, encoding, byte_pieces(body)), expected) << "byte by byte";
  for (unsigned seed = 1; seed <= 20; ++seed) {
    for (std::size_t max_piece : {7, 100, 4096}) {
      EXPECT_EQ(meter_pieces(content_type, encoding, random_body_pieces(body, max_piece, seed)), expected)
          << "random pieces up to " << max_piece << ", seed " << seed;
    }
  }
}

// The body with every line end, whatever it was, replaced by `line_end`.
std::string with_line_ends(std::string_view body, std::string_view line_end) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\r' || body[i] == '\n') {
      if (body[i] == '\r' && i + 1 < body.size() && body[i + 1] == '\n') {
        ++i;
      }
      out += line_end;
    } else {
      out += body[i];
    }
  }
  return out;
}

bool is_event_stream(const test::UsageFixture& fixture) {
  return fixture.content_type.starts_with("text/event-stream");
}

TEST(UsageMeter, EveryFixtureCountsTheSameInAnyPieces) {
  for (const test::UsageFixture& fixture : k_usage_fixtures) {
    SCOPED_TRACE(fixture.file);
    expect_any_split_counts(fixture.content_type, "", usage_body(fixture.file), fixture.expected);
  }
}

TEST(UsageMeter, EveryEventStreamCountsTheSameWithLfCrlfOrCrLineEnds) {
  // Random pieces of a CRLF stream also split some CRLFs between pieces.
  for (const test::UsageFixture& fixture : k_usage_fixtures) {
    if (!is_event_stream(fixture)) {
      continue;
    }
    for (std::string_view line_end : {"\n", "\r\n", "\r"}) {
      SCOPED_TRACE(std::string(fixture.file) + (line_end == "\n"   ? " LF"
                                                : line_end == "\r" ? " CR"
                                                                   : " CRLF"));
      std::string body = with_line_ends(usage_body(fixture.file), line_end);
      expect_any_split_counts(fixture.content_type, "", body, fixture.expected);
    }
  }
}

TEST(UsageMeter, CrAndLfSplitBetweenPiecesEndOneLineNotTwo) {
  // Were the LF read as a second line end, the blank line would end the event
  // between its two data lines, and neither half is JSON.
  std::vector<std::string_view> pieces = {"event: message_delta\r", "\ndata: {\"type\":\"message_delta\",\r",
                                          "\ndata: \"usage\":{\"output_tokens\":3}}\r", "\n\r", "\n"};
  EXPECT_EQ(meter_pieces(test::k_event_stream, "", pieces), (Usage{std::nullopt, 3}));
  pieces = {"data: {\"usage\":\r", "", "\n", "data: {\"output_tokens\":3}}\r", "\r"};
  EXPECT_EQ(meter_pieces(test::k_event_stream, "", pieces), (Usage{std::nullopt, 3}));
}

// The body compressed as a streaming server does it: flushed after every
// event (or every 300 bytes of a JSON body), so each part decodes as it comes.
std::string compress_streaming(Codec codec, std::string_view body, bool events) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = events ? body.find("\n\n", pos) : pos + 300;
    end = end == std::string_view::npos ? body.size() : std::min(end + 2, body.size());
    parts.emplace_back(body.substr(pos, end - pos));
    pos = end;
  }
  std::string encoded;
  for (const std::string& part : test::compress_pieces(codec, parts)) {
    encoded += part;
  }
  return encoded;
}

TEST(UsageMeter, EveryFixtureCountsTheSameCompressed) {
  for (const Encoding& encoding : k_encodings) {
    for (const test::UsageFixture& fixture : k_usage_fixtures) {
      SCOPED_TRACE(std::string(fixture.file) + " in " + std::string(encoding.header));
      std::string body = usage_body(fixture.file);
      std::string encoded = compress_streaming(encoding.codec, body, is_event_stream(fixture));
      expect_any_split_counts(fixture.content_type, encoding.header, encoded, fixture.expected);
    }
  }
}

TEST(UsageMeter, CompressedStreamInflatingFarInOnePieceLosesNothing) {
  // Thousands of identical text deltas compress to a few KiB that decode to
  // megabytes at once; the usage event at the end still counts.
  std::string body;
  std::string delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                      "\"delta\":{\"type\":\"text_delta\",\"text\":\"ha\"}}\n\n";
  while (body.size() < (std::size_t{6} << 20)) {
    body += delta;
  }
  body = usage_body("anthropic_messages_stream.sse") + body +
         "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":65000}}\n\n";
  for (const Encoding& encoding : k_encodings) {
    SCOPED_TRACE(encoding.header);
    EXPECT_EQ(meter_whole(test::k_event_stream, test::compress(encoding.codec, body), encoding.header),
              (Usage{472, 65000}));
  }
}

TEST(UsageMeter, CorruptCompressedStreamKeepsWhatWasReadBeforeTheDamage) {
  std::string body = usage_body("anthropic_messages_stream.sse");
  std::size_t delta = body.find("event: message_delta");
  std::vector<std::string> parts =
      test::compress_pieces(Codec::gzip, {body.substr(0, delta), body.substr(delta)});
  std::string damaged = parts[0] + std::string(32, '\xff');
  EXPECT_EQ(meter_whole(test::k_event_stream, damaged, "gzip"), (Usage{472, std::nullopt}));
  // A damaged JSON body is not a JSON body.
  std::string json = test::compress(Codec::gzip, usage_body("openai_chat.json"));
  json[json.size() / 2] = static_cast<char>(json[json.size() / 2] ^ 0x55);
  EXPECT_EQ(meter_whole(test::k_json, json, "gzip"), Usage{});
}

} // namespace
} // namespace keyshim::policy
