// The skimmer passes over events without reading them: whatever the stream
// and however it is split, the events with a usage object that reach the sink
// are exactly those the reader alone dispatches.
#include "policy/event_skimmer.hpp"
#include "policy/usage_tally.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace keyshim::policy::detail {
namespace {

struct UsageEvents final : EventSink {
  void on_event(std::string_view data) override {
    if (has_usage_object(data)) {
      events.emplace_back(data);
    }
  }
  std::vector<std::string> events;
};

constexpr std::size_t k_max_event = 200 * 1024;

std::vector<std::string> read_whole(std::string_view stream) {
  UsageEvents sink;
  EventStreamReader reader(sink, k_max_event);
  reader.take(stream);
  return sink.events;
}

std::vector<std::string> skim(const std::vector<std::string_view>& pieces) {
  UsageEvents sink;
  EventSkimmer skimmer(sink, k_max_event);
  for (std::string_view piece : pieces) {
    skimmer.take(piece);
  }
  return sink.events;
}

std::string filler(std::size_t size, char c = 'x') {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(size, c) + "\"}}]}";
}

// Streams with usage events among others, line ends of every kind, names
// cut across lines, and events longer than the skimmer keeps.
std::vector<std::string> streams() {
  std::string usage = R"(data: {"usage":{"prompt_tokens":3,"completion_tokens":5}})";
  std::string meta = R"(data: {"usageMetadata" : {"promptTokenCount":7}})";
  std::string nulled = R"(data: {"usage":null,"choices":[]})";
  std::string split_name = "data: {\"usage\"\ndata: :{\"input_tokens\":9}}";
  std::string comment = ": \"usage\":{ not data";
  std::string second_line = "data: {\"id\":1,\nid: 7\ndata: \"usage\":{\"prompt_tokens\":4}}";
  std::vector<std::string> out;
  for (std::string_view end : {"\n", "\r\n", "\r"}) {
    std::string e(end);
    out.push_back(filler(30) + e + e + usage + e + e + filler(10) + e + e);
    out.push_back(e + e + filler(5) + e + "event: x" + e + e + meta + e + e + nulled + e + e + usage + e + e);
    out.push_back(comment + e + filler(3) + e + e + split_name + e + e + filler(1) + e + e + meta + e);
    out.push_back(filler(4) + e + e + second_line + e + e + filler(2000) + e + second_line + e + e);
    out.push_back(filler(70 * 1024) + e + e + usage + e + e);
    out.push_back(filler(70 * 1024) + e + usage + e + e + filler(20) + e + e + usage + e + e);
    out.push_back(filler(300 * 1024) + e + usage + e + e + usage + e + e);
    out.push_back("\xEF\xBB\xBF" + usage + e + e + filler(9) + e + "data:" + e + e + meta + e + e);
  }
  out.push_back(filler(8) + "\r\n\r" + usage + "\n\r\n" + filler(2) + "\n\r" + meta + "\r\r");
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
    std::vector<std::string> expected = read_whole(stream);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(skim({stream}), expected) << "whole";
    for (unsigned seed = 1; seed <= 10; ++seed) {
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
    std::vector<std::string> expected = read_whole(stream);
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
      EXPECT_EQ(skim({whole.substr(0, cut), whole.substr(cut)}), expected) << "cut at " << cut;
    }
  }
}

TEST(EventSkimmer, SkipsAnEventLongerThanTheLimitAsTheReaderDoes) {
  std::string usage = R"(data: {"usage":{"prompt_tokens":3}})";
  std::string stream = filler(10) + "\n\n" + usage + "\n" + filler(k_max_event) + "\n\n" + usage + "\n\n";
  std::vector<std::string> expected = read_whole(stream);
  ASSERT_EQ(expected.size(), 1U);
  EXPECT_EQ(skim(random_pieces(stream, 16 * 1024, 1)), expected);
}

} // namespace
} // namespace keyshim::policy::detail
