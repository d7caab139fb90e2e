// Reading keyshim-replay and keyshim-key (docs/behaviour.md §4.2), and the
// log line of a replay.
#include "relay/replay_request.hpp"
#include "relay/request_log.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace keyshim::relay {
namespace {

RequestHead parse_replay_header(std::string_view text) {
  http::request_parser<http::empty_body, HeadAllocator> parser;
  ErrorCode ec;
  parser.put(asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  return parser.release();
}

config::KeyConfig labelled(const std::string& label) {
  config::KeyConfig key;
  key.label = label;
  key.secret = util::Secret("sk-test-" + label + "-0123456789");
  key.base_url = config::UpstreamUrl{"https", "api.example.com", 443, ""};
  return key;
}

class ReplayRequestTest : public ::testing::Test {
protected:
  ReplayRequestTest() : m_keys({labelled("team"), labelled("personal")}, config::Strategy::ordered, m_clock) {
    m_pool.name = "openai";
  }

  ReplayRequest read(const std::string& fields) {
    return read_replay_request(
        parse_replay_header("POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + "\r\n"), m_keys, m_pool);
  }

  test::FakeClock m_clock;
  pool::KeyPool m_keys;
  config::PoolConfig m_pool;
};

TEST_F(ReplayRequestTest, WithoutTheFieldsNothingChanges) {
  ReplayRequest replay = read("");
  EXPECT_FALSE(replay.replay_of);
  EXPECT_FALSE(replay.pinned);
  EXPECT_FALSE(replay.refusal);
}

TEST_F(ReplayRequestTest, BothFieldsAreReadInAnyCase) {
  ReplayRequest replay = read("KeyShim-Replay: 12\r\nKEYSHIM-KEY: personal\r\n");
  EXPECT_EQ(replay.replay_of, 12u);
  EXPECT_EQ(replay.pinned, 1u);
  EXPECT_FALSE(replay.refusal);
}

TEST_F(ReplayRequestTest, AnUnknownLabelIs400NamingThePoolsLabels) {
  ReplayRequest replay = read("keyshim-key: Team\r\n");
  ASSERT_TRUE(replay.refusal);
  EXPECT_EQ(replay.refusal->status, 400);
  EXPECT_NE(replay.refusal->body.find(R"(pool \"openai\" has no key labelled \"Team\"; its keys are )"
                                      R"(\"team\", \"personal\")"),
            std::string::npos)
      << replay.refusal->body;
}

TEST_F(ReplayRequestTest, AnIdMustBeAPositiveDecimalInteger) {
  for (const char* bad : {"0", "-1", "1.5", "0x10", "12 13", "99999999999999999999999"}) {
    ReplayRequest replay = read(std::string("keyshim-replay: ") + bad + "\r\n");
    ASSERT_TRUE(replay.refusal) << bad;
    EXPECT_EQ(replay.refusal->status, 400) << bad;
  }
}

TEST_F(ReplayRequestTest, AFieldGivenTwiceIs400) {
  EXPECT_TRUE(read("keyshim-key: team\r\nkeyshim-key: team\r\n").refusal);
  EXPECT_TRUE(read("keyshim-replay: 1\r\nKeyshim-Replay: 2\r\n").refusal);
}

TEST(RequestLog, AReplaySaysWhichCaptureItReplays) {
  RequestRecord record;
  record.method = "POST";
  record.path = "/v1/x";
  record.status = 200;
  record.key_label = "team";
  record.attempts = 1;
  record.replay_of = 12;
  EXPECT_EQ(format_request_text(record), "POST /v1/x 200 key=team replay=12 attempts=1 dur=0ms bytes=0");
  record.replay_of.reset();
  EXPECT_EQ(format_request_text(record).find("replay"), std::string::npos);
}

} // namespace
} // namespace keyshim::relay
