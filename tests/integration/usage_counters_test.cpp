// Token counters at their ceiling, through the real server: responses that
// each report 3 x 2^53 input tokens (the most the usage meter accepts) used
// to wrap keyshim_key_input_tokens_total back to 9e15 at the 683rd response,
// which Prometheus reads as a restart, and /status printed it as a float.
// And a fast stream of small chunks, relayed and counted exactly.
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdint>
#include <limits>
#include <string>

namespace keyshim::test {
namespace {

TEST(UsageCounters, TokenCountsStopAtTheCeilingAndPrintAsExactIntegers) {
  constexpr int k_responses = 700;
  const std::string usage =
      R"({"type":"message","usage":{"input_tokens":9007199254740992,)"
      R"("cache_creation_input_tokens":9007199254740992,"cache_read_input_tokens":9007199254740992,)"
      R"("output_tokens":1}})";
  FakeUpstream upstream;
  for (int i = 0; i < k_responses; ++i) {
    upstream.push(json(200, usage));
  }
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(10, 0);
  std::uint64_t previous = 0;
  for (int i = 0; i < k_responses; ++i) {
    httplib::Result res = client.Post("/v1/messages", R"({"messages":[]})", "application/json");
    ASSERT_TRUE(res) << "response " << i + 1;
    ASSERT_EQ(res->status, 200);
    std::uint64_t now = shim.server().state()->pools.at(0).keys->health(0).total.input_tokens;
    ASSERT_GE(now, previous) << "the counter went down at response " << i + 1;
    previous = now;
  }
  EXPECT_EQ(previous, std::numeric_limits<std::uint64_t>::max());

  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find(
                "keyshim_key_input_tokens_total{pool=\"default\",key=\"k0\"} 18446744073709551615\n"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("keyshim_key_output_tokens_total{pool=\"default\",key=\"k0\"} 700\n"),
            std::string::npos);
  httplib::Result status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find(R"("input_tokens":18446744073709551615,)"), std::string::npos) << status->body;
}

// An upstream that flushes every event as a chunk of its own, faster than
// one client write each: keyshim relays the chunks that arrived together in
// one write (issue 19), and the usage meter passes over the events that name
// no usage. Neither may change a byte or the count.
TEST(UsageCounters, AFastStreamOfSmallChunksArrivesWholeAndCountsItsUsage) {
  constexpr int k_events = 3000;
  Scripted stream;
  stream.headers = {{"Content-Type", "text/event-stream"}};
  std::string expected;
  for (int i = 0; i < k_events; ++i) {
    std::string event = "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::to_string(i) +
                        std::string(static_cast<std::size_t>(i % 97), 'x') + "\"}}],\"usage\":null}\n\n";
    expected += event;
    stream.pieces.push_back(std::move(event));
  }
  std::string last = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\n"
                     "data: [DONE]\n\n";
  expected += last;
  stream.pieces.push_back(std::move(last));
  FakeUpstream upstream;
  upstream.push(std::move(stream));
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  client.set_keep_alive(true); // the next request waits for this one's end
  httplib::Result res = client.Post("/v1/chat/completions", R"({"stream":true})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->body, expected);
  // The response is counted when its last write completes, which the client
  // may see first; the connection reads the next request only after that.
  ASSERT_TRUE(client.Get("/health"));
  const auto& counts = shim.server().state()->pools.at(0).keys->health(0).total;
  EXPECT_EQ(counts.input_tokens, 11U);
  EXPECT_EQ(counts.output_tokens, 7U);
}

} // namespace
} // namespace keyshim::test
