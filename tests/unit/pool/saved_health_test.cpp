// KeyPool::save and KeyPool::restore: what a restart keeps of the keys'
// health, through the JSON the state file holds.
#include "pool/saved_health.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;

// The pool's saved health as the file has it, read back.
std::vector<SavedKey> through_json(const KeyPool& pool) {
  std::vector<SavedKey> out;
  for (const SavedKey& key : pool.save()) {
    std::optional<util::Json> json = util::parse_json(to_json(key).dump());
    EXPECT_TRUE(json.has_value());
    std::optional<SavedKey> back = saved_key_from_json(*json);
    EXPECT_TRUE(back.has_value());
    out.push_back(std::move(*back));
  }
  return out;
}

class SavedHealthTest : public ::testing::Test {
protected:
  test::FakeClock m_clock;
  KeyPool m_before{make_keys({"a", "b", "c"}), Strategy::ordered, m_clock};
  const std::string m_model = "gpt-x";
};

TEST_F(SavedHealthTest, CoolingDisabledAndModelTroubleComeBackWithTheirEndsAndReasons) {
  m_before.report(0, nullptr, test::cool(429, 1h, true, "429 Retry-After"));
  m_before.report(1, nullptr, test::disable(401, "401"));
  m_before.report(2, &m_model, test::cool(429, 10min, false, "429 model", Scope::model));
  m_before.count_tokens(2, 100, 20);
  std::vector<SavedKey> saved = through_json(m_before);

  m_clock.advance(5min); // the restart took a while
  KeyPool after{make_keys({"a", "b", "c"}), Strategy::ordered, m_clock};
  EXPECT_EQ(after.restore(saved, 24h), 3u);
  KeyHealth a = after.health(0);
  EXPECT_EQ(a.state, KeyState::cooling);
  EXPECT_EQ(a.until, m_before.health(0).until);
  EXPECT_EQ(a.reason, "429 Retry-After");
  EXPECT_EQ(a.consecutive_rate_limits, 1) << "the next 429 backs off from where the last run was";
  KeyHealth b = after.health(1);
  EXPECT_EQ(b.state, KeyState::disabled);
  EXPECT_EQ(b.reason, "401");
  EXPECT_TRUE(after.cooling_for(2, &m_model));
  EXPECT_FALSE(after.cooling_for(2));
  EXPECT_EQ(after.health(2).today.input_tokens, 100u);
  EXPECT_EQ(after.health(2).total.output_tokens, 20u);
  EXPECT_EQ(after.health(2).total.requests, 1u);
}

TEST_F(SavedHealthTest, ACoolingThatEndedDuringTheRestartIsNotRestored) {
  m_before.report(0, nullptr, test::cool(429, 30s, true, "429"));
  std::vector<SavedKey> saved = through_json(m_before);
  m_clock.advance(31s);
  KeyPool after{make_keys({"a", "b", "c"}), Strategy::ordered, m_clock};
  after.restore(saved, 24h);
  EXPECT_EQ(after.health(0).state, KeyState::available);
  EXPECT_EQ(test::take(after), 0);
}

TEST_F(SavedHealthTest, ARestoredCoolingIsCutToTheCap) {
  m_before.report(0, nullptr, test::cool(429, 48h, true, "429"));
  KeyPool after{make_keys({"a"}), Strategy::ordered, m_clock};
  after.restore(through_json(m_before), 1h);
  EXPECT_EQ(after.health(0).until, m_clock.now() + 1h);
}

TEST_F(SavedHealthTest, OnlyKeysWithTheSameFingerprintTakeSomethingBack) {
  m_before.report(0, nullptr, test::cool(429, 1h, true, "429"));
  KeyPool after{make_keys({"b", "new"}), Strategy::ordered, m_clock};
  EXPECT_EQ(after.restore(through_json(m_before), 24h), 1u);
  EXPECT_EQ(after.health(0).state, KeyState::available);
  EXPECT_EQ(after.health(1).state, KeyState::available);
}

TEST_F(SavedHealthTest, TodaysUsageFromAnotherDayStartsFromZero) {
  m_before.count_tokens(0, 500, 50);
  std::vector<SavedKey> saved = through_json(m_before);
  m_clock.advance(48h);
  KeyPool after{make_keys({"a"}), Strategy::ordered, m_clock};
  after.restore(saved, 24h);
  EXPECT_EQ(after.health(0).today.input_tokens, 0u);
  EXPECT_EQ(after.health(0).total.input_tokens, 500u);
}

TEST_F(SavedHealthTest, ADamagedEntryIsRefusedOrBounded) {
  EXPECT_FALSE(saved_key_from_json(util::Json::make_string("x")));
  EXPECT_FALSE(saved_key_from_json(*util::parse_json(R"({"state":"cooling"})")));
  std::string long_reason(10'000, 'r');
  auto key = saved_key_from_json(*util::parse_json(R"({"fingerprint":"f","state":"cooling","until_ms":-5,
      "reason":")" + long_reason + R"(","failures":"many","models":[{"until_ms":1e300}]})"));
  ASSERT_TRUE(key);
  EXPECT_LE(key->reason.size(), 256u);
  EXPECT_EQ(key->streaks.failures, 0);
  EXPECT_TRUE(key->models.empty()) << "a model entry without a name is dropped";
}

} // namespace
} // namespace keyshim::pool

namespace keyshim::pool {
namespace {

TEST_F(SavedHealthTest, TheQuotaAProviderLastReportedComesBack) {
  Report report = test::success(200);
  QuotaReport quota;
  quota.quota.reported = m_clock.now();
  quota.quota.kinds.at(static_cast<std::size_t>(QuotaKind::requests)) =
      QuotaFigures{500, 12, m_clock.now() + 30s};
  quota.quota.kinds.at(static_cast<std::size_t>(QuotaKind::tokens)) = QuotaFigures{90'000, std::nullopt, {}};
  report.quota = quota;
  m_before.report(0, nullptr, report);
  KeyPool after{make_keys({"a"}), Strategy::ordered, m_clock};
  after.restore(through_json(m_before), 24h);
  std::optional<KeyQuota> back = after.health(0).quota;
  ASSERT_TRUE(back);
  const QuotaFigures& requests = back->kinds.at(static_cast<std::size_t>(QuotaKind::requests));
  EXPECT_EQ(requests.limit, 500u);
  EXPECT_EQ(requests.remaining, 12u);
  EXPECT_EQ(requests.reset, m_clock.now() + 30s);
  const QuotaFigures& tokens = back->kinds.at(static_cast<std::size_t>(QuotaKind::tokens));
  EXPECT_EQ(tokens.limit, 90'000u);
  EXPECT_FALSE(tokens.remaining);
  EXPECT_FALSE(tokens.reset);
  EXPECT_FALSE(after.health(0).quota->kinds.at(static_cast<std::size_t>(QuotaKind::unified)).limit);
}

// The restored figures steer round-robin at once, before the key's next answer.
TEST_F(SavedHealthTest, ARestoredLowQuotaPutsTheKeyLastForRoundRobin) {
  Report report = test::success(200);
  QuotaReport quota;
  quota.quota.reported = m_clock.now();
  quota.quota.kinds.at(static_cast<std::size_t>(QuotaKind::requests)) =
      QuotaFigures{500, 12, m_clock.now() + 30s};
  report.quota = quota;
  m_before.report(0, nullptr, report);
  KeyPool after{make_keys({"a", "b"}), Strategy::round_robin, m_clock};
  after.restore(through_json(m_before), 24h);
  EXPECT_EQ(test::take(after), 1) << "a has 2 % of its requests left";
}

} // namespace
} // namespace keyshim::pool

namespace keyshim::pool {
namespace {

TEST_F(SavedHealthTest, ASessionKeepsItsKeyAcrossARestartWithinItsTtl) {
  KeyPool before{make_keys({"a", "b", "c"}), Strategy::round_robin, m_clock};
  EXPECT_EQ(test::take(before), 0); // the cursor moves on: a new session would start on b
  Selection chosen = before.acquire({}, nullptr, Affinity{42, 0});
  ASSERT_EQ(chosen.index, 1u);
  before.release(1);
  std::vector<SavedKey> saved = through_json(before);
  ASSERT_EQ(saved[1].sessions.size(), 1u);

  m_clock.advance(10min);
  KeyPool after{make_keys({"c", "b", "a"}), Strategy::round_robin, m_clock}; // the file's order changed
  after.restore(saved, 24h);
  EXPECT_EQ(after.acquire({}, nullptr, Affinity{42, 0}).index, 1u) << "b, wherever it is in the file";
  EXPECT_EQ(after.acquire({}, nullptr, Affinity{7, 0}).index, 0u) << "a new session is the strategy's";

  std::vector<SavedKey> saved_again = through_json(after);
  ASSERT_EQ(saved_again[1].sessions.size(), 1u);
  m_clock.advance(2h); // past the default ttl of 1 h
  KeyPool later{make_keys({"c", "b", "a"}), Strategy::round_robin, m_clock};
  later.restore(saved_again, 24h);
  EXPECT_TRUE(through_json(later)[1].sessions.empty()) << "a session past its ttl is not restored";
}

} // namespace
} // namespace keyshim::pool

namespace keyshim::pool {
namespace {

std::vector<config::KeyConfig> limited_keys() {
  std::vector<config::KeyConfig> keys = make_keys({"a", "b"});
  keys[0].limits.requests_per_day = 2;
  keys[0].limits.requests_per_minute = 100;
  return keys;
}

TEST_F(SavedHealthTest, UseAgainstOwnLimitsCountsOnAcrossARestartUntilItsWindowEnds) {
  KeyPool before{limited_keys(), Strategy::ordered, m_clock};
  ASSERT_EQ(test::take(before), 0);
  ASSERT_EQ(test::take(before), 0); // a's 2 requests of the day are spent
  std::vector<SavedKey> saved = through_json(before);

  m_clock.advance(1min);
  KeyPool after{limited_keys(), Strategy::ordered, m_clock};
  after.restore(saved, 24h);
  EXPECT_EQ(test::take(after), 1) << "a restart does not give a back its day's requests";

  m_clock.advance(24h); // the next day
  KeyPool next_day{limited_keys(), Strategy::ordered, m_clock};
  next_day.restore(saved, 24h);
  EXPECT_EQ(test::take(next_day), 0);
}

} // namespace
} // namespace keyshim::pool
