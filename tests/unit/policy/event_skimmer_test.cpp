// The usage meter passes over events without reading them (the skimmer of
// policy/event_skimmer.hpp): whatever the stream and however it is split, it
// must count what reading the whole stream at once counts. Each stream below
// has exactly one event that reports usage, among decoys, so a missed event
// shows.
#include "policy/usage_meter.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace keyshim::policy {
namespace {

constexpr std::size_t k_max_event = UsageMeter::k_max_event_bytes;

Usage meter(const std::vector<std::string_view>& pieces) {
  UsageMeter usage("text/event-stream", "");
  for (std::string_view piece : pieces) {
    usage.feed(piece);
  }
  return usage.finish();
}

// The whole stream in one piece: the meter's reader reads all of it.
Usage read_whole(std::string_view stream) {
  return meter({stream});
}

Usage skim(const std::vector<std::string_view>& pieces) {
  return meter(pieces);
}

std::string filler(std::size_t size, char c = 'x') {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(size, c) + "\"}}]}";
}

// Streams with one usage event among decoys ("usage":null, a comment that
// names it, other events), with every kind of line end, names cut across
// lines, and events longer than the skimmer keeps or the meter reads.
std::vector<std::string> streams() {
  std::vector<std::string> out;
  for (std::string_view end : {"\n", "\r\n", "\r"}) {
    std::string e(end);
    std::string nulled = R"(data: {"usage":null,"choices":[]})";
    std::string comment = ": \"usage\":{ not data";
    for (const std::string& u :
         {std::string(R"(data: {"usage":{"prompt_tokens":3,"completion_tokens":5}})"),
          std::string(R"(data: {"usageMetadata" : {"promptTokenCount":7}})"),
          "data: {\"usage\"" + e + "data: :{\"input_tokens\":9}}",
          "data: {\"id\":1," + e + "id: 7" + e + "data: \"usage\":{\"prompt_tokens\":4}}"}) {
      out.push_back(filler(30) + e + e + u + e + e + filler(10) + e + e);
      out.push_back(e + e + filler(5) + e + "event: x" + e + e + nulled + e + e + u + e + e + comment + e +
                    e);
      out.push_back(comment + e + filler(3) + e + e + u + e + e + "data:" + e + e + nulled + e + e);
      out.push_back(filler(70 * 1024) + e + e + u + e + e + filler(20) + e + e);
      out.push_back(filler(300 * 1024) + e + nulled + e + e + u + e + e);
      out.push_back(filler(k_max_event) + e + e + u + e + e);
      out.push_back("\xEF\xBB\xBF" + u + e + e + filler(9) + e + e);
    }
  }
  std::string usage = R"(data: {"usage":{"prompt_tokens":3,"completion_tokens":5}})";
  out.push_back(filler(8) + "\r\n\r" + usage + "\n\r\n" + filler(2) + "\n\r" + "\r\r");
  return out;
}

std::vector<std::string_view> random_pieces(std::string_view stream, std::size_t max_piece, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::size_t> size(1, max_piece);
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0; pos < stream.size();) {
    std::size_t take = std::min(size(random), stream.size() - pos);
    pieces.push_back(stream.substr(pos, take));
    pos += take;
  }
  return pieces;
}

TEST(EventSkimmer, PassesTheReaderTheSameUsageEventsInAnyPieces) {
  for (const std::string& stream : streams()) {
    Usage expected = read_whole(stream);
    ASSERT_TRUE(expected.input || expected.output);
    EXPECT_EQ(skim({stream}), expected) << "whole";
    for (unsigned seed = 1; seed <= 5; ++seed) {
      for (std::size_t max_piece : {3, 40, 1500, 70000}) {
        EXPECT_EQ(skim(random_pieces(stream, max_piece, seed)), expected)
            << "pieces up to " << max_piece << ", seed " << seed;
      }
    }
  }
}

TEST(EventSkimmer, FindsTheUsageEventWhereverTheStreamIsCutInTwo) {
  for (const std::string& stream : streams()) {
    if (stream.size() > 4096) {
      continue; // every cut of the short streams; the long ones above
    }
    std::string_view whole(stream);
    Usage expected = read_whole(stream);
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
      EXPECT_EQ(skim({whole.substr(0, cut), whole.substr(cut)}), expected) << "cut at " << cut;
    }
  }
}

TEST(EventSkimmer, SkipsAnEventLongerThanTheLimitAsTheReaderDoes) {
  std::string skipped = R"(data: {"usage":{"prompt_tokens":3}})";
  std::string counted = R"(data: {"usage":{"completion_tokens":4}})";
  std::string stream = filler(10) + "\n\n" + skipped + "\n" + filler(k_max_event) + "\n\n" + counted + "\n\n";
  Usage expected = read_whole(stream);
  EXPECT_EQ(expected.input, std::nullopt);
  EXPECT_EQ(expected.output, 4U);
  EXPECT_EQ(skim(random_pieces(stream, 16 * 1024, 1)), expected);
}

} // namespace
} // namespace keyshim::policy
