// The capture ring and what goes into an entry: eviction and ids, the memory
// account, heads without credentials, masked targets and bodies, and which
// exchanges each mode keeps.
#include "relay/capture.hpp"
#include "relay/capture_draft.hpp"
#include "relay/redact.hpp"
#include "support/fake_clock.hpp"
#include "util/ascii.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keyshim::relay {
namespace {

const std::string k_key = "sk-capture/unit+key=0123456789";
const std::string k_other = "sk-capture-other-key-000000";

class CaptureMasking : public ::testing::Test {
protected:
  CaptureMasking() : m_pool(keys(), config::Strategy::ordered, m_clock), m_redactor(m_pool) {}

  static std::vector<config::KeyConfig> keys() {
    std::vector<config::KeyConfig> out(2);
    out[0].label = "a";
    out[0].secret = util::Secret(k_key);
    out[1].label = "b";
    out[1].secret = util::Secret(k_other);
    return out;
  }
  std::string fingerprint(std::size_t i) const { return m_pool.key(i).secret.fingerprint(); }

  test::FakeClock m_clock;
  pool::KeyPool m_pool;
  Redactor m_redactor;
  util::Secret m_token{"client-token-for-capture"};
  CaptureMask m_mask{m_redactor, &m_token};
};

Capture entry_with_body(std::size_t n) {
  Capture c;
  c.pool = "default";
  c.request_body.data.assign(n, 'x');
  return c;
}

TEST(CaptureRing, KeepsTheNewestEntriesAndGivesGrowingIds) {
  CaptureRing ring;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(ring.push(entry_with_body(10), 3), static_cast<std::uint64_t>(i + 1));
  }
  ASSERT_EQ(ring.entries().size(), 3u);
  EXPECT_EQ(ring.entries().front().id, 3u);
  EXPECT_EQ(ring.find(2), nullptr);
  ASSERT_NE(ring.find(4), nullptr);
  EXPECT_EQ(ring.find(4)->id, 4u);
  EXPECT_EQ(ring.find(6), nullptr);
  EXPECT_EQ(ring.last_id(), 5u);
}

TEST(CaptureRing, AccountsForTheMemoryOfTheEntriesItHolds) {
  CaptureRing ring;
  ring.push(entry_with_body(1000), 2);
  std::uint64_t one = ring.bytes();
  EXPECT_GE(one, 1000u + sizeof(Capture));
  ring.push(entry_with_body(1000), 2);
  ring.push(entry_with_body(1000), 2);
  EXPECT_EQ(ring.bytes(), 2 * one);
  ring.push(entry_with_body(0), 0); // a size of 0 keeps nothing
  EXPECT_EQ(ring.bytes(), 0u);
  EXPECT_TRUE(ring.entries().empty());
  EXPECT_EQ(ring.push(entry_with_body(0), 1), 5u); // ids are never reused
}

TEST_F(CaptureMasking, HeadsLoseCredentialsAndKeepOtherFieldsMasked) {
  Fields head = {{"Authorization", "Bearer x"},
                 {"X-Api-Key", "y"},
                 {"x-goog-api-key", "z"},
                 {"api-key", "w"},
                 {"Cookie", "s=1"},
                 {"Proxy-Authorization", "Basic q"},
                 {"Content-Type", "json"},
                 {"X-Echo", "key " + k_key},
                 {"X-Token", m_token.reveal()}};
  Fields kept = captured_head(head, m_mask);
  Fields expected = {
      {"Content-Type", "json"}, {"X-Echo", "key " + fingerprint(0)}, {"X-Token", m_token.fingerprint()}};
  EXPECT_EQ(kept, expected);
}

TEST_F(CaptureMasking, AHugeHeadIsCutAndSaysHowManyFieldsWereLeftOut) {
  Fields head;
  for (int i = 0; i < 1000; ++i) {
    head.emplace_back("X-F" + std::to_string(i), std::string(100, 'v'));
  }
  Fields kept = captured_head(head, m_mask);
  ASSERT_LT(kept.size(), head.size());
  EXPECT_EQ(kept.back().first, "keyshim-capture");
  EXPECT_EQ(kept.back().second, std::to_string(head.size() - kept.size() + 1) + " more fields not kept");
}

TEST_F(CaptureMasking, TargetsKeepTheirQueryWithCredentialsAndKeysMasked) {
  std::vector<std::string> params = {"api_key"};
  EXPECT_EQ(captured_target("/v1/x?key=abc&api_key=def&alt=sse", params, m_mask),
            "/v1/x?key=~&api_key=~&alt=sse");
  EXPECT_EQ(captured_target("/v1/x?q=" + util::percent_encode(k_key), {}, m_mask),
            "/v1/x?q=" + fingerprint(0));
  EXPECT_EQ(captured_target("/v1/" + k_other, {}, m_mask), "/v1/" + fingerprint(1));
}

TEST_F(CaptureMasking, BodiesAreMaskedThenCutAtTheLimit) {
  CapturedBody whole = captured_body("say " + k_key, 4 + k_key.size(), 1024, m_mask);
  EXPECT_EQ(whole.data, "say " + fingerprint(0));
  EXPECT_FALSE(whole.truncated);
  // The limit falls inside the key: it is masked whole before the cut.
  std::string body = std::string(10, 'x') + util::percent_encode(k_key) + std::string(100, 'y');
  CapturedBody cut = captured_body(body, body.size(), 14, m_mask);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.size, body.size());
  EXPECT_EQ(cut.data, (std::string(10, 'x') + fingerprint(0)).substr(0, 14));
}

TEST_F(CaptureMasking, ACutNeverSplitsAUtf8Character) {
  std::string body = "ab\xc3\xa9\xc3\xa9"; // abéé
  CapturedBody cut = captured_body(body, body.size(), 3, m_mask);
  EXPECT_EQ(cut.data, "ab");
  EXPECT_TRUE(cut.truncated);
}

TEST(CaptureWanted, ErrorsKeepsFailuresFailoversAndCutAnswersButNotAPlainSuccess) {
  RequestRecord ok;
  ok.status = 200;
  EXPECT_FALSE(capture_wanted(config::CaptureMode::errors, ok, false));
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, ok, true)); // a failover
  EXPECT_TRUE(capture_wanted(config::CaptureMode::all, ok, false));
  EXPECT_FALSE(capture_wanted(config::CaptureMode::off, ok, true));
  RequestRecord cut = ok;
  cut.error = "upstream reset after 10 bytes";
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, cut, false));
  RequestRecord refused;
  refused.status = 429;
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, refused, false));
  RequestRecord left; // status 0: the client left first
  left.client_left = true;
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, left, false));
}

TEST(CaptureWanted, ErrorsLeavesOutAClientThatStoppedReadingAnAnswer) {
  RequestRecord stopped;
  stopped.status = 200;
  stopped.error = "client went away mid-stream";
  stopped.client_left = true;
  EXPECT_FALSE(capture_wanted(config::CaptureMode::errors, stopped, false));
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, stopped, true)); // after a failover
  EXPECT_TRUE(capture_wanted(config::CaptureMode::all, stopped, false));
  RequestRecord refused = stopped;
  refused.status = 503; // keyshim's own answer, not read to its end
  EXPECT_TRUE(capture_wanted(config::CaptureMode::errors, refused, false));
}

TEST(CaptureDraft, KeepsTheFirstBytesOfTheResponseAndTheChain) {
  CaptureDraft draft(config::CaptureMode::errors, "/v1/x", util::TimePoint{}, 8);
  CaptureDraft::Mono start{};
  draft.attempt_started(start);
  draft.step("a", 429, "cool", "429 Retry-After", start + std::chrono::milliseconds(3));
  draft.attempt_started(start + std::chrono::milliseconds(3));
  draft.step("b", 200, "ok", "", start + std::chrono::milliseconds(8));
  draft.tee("0123");
  draft.tee("456789");
  RequestRecord record;
  record.status = 200;
  record.bytes = 10;
  EXPECT_TRUE(draft.wanted(record));
  test::FakeClock clock;
  pool::KeyPool none({}, config::Strategy::ordered, clock);
  Redactor redactor(none);
  CaptureMask mask(redactor, nullptr);
  Capture c = draft.build(record, {{}, "{}", nullptr}, mask, 8);
  ASSERT_EQ(c.chain.size(), 2u);
  EXPECT_EQ(c.chain[0].ms, 3);
  EXPECT_EQ(c.chain[1].ms, 5);
  EXPECT_EQ(c.response_body.data, "01234567");
  EXPECT_TRUE(c.response_body.truncated);
  EXPECT_EQ(c.response_body.size, 10u);
  EXPECT_EQ(c.request_body.data, "{}");
}

} // namespace
} // namespace keyshim::relay
