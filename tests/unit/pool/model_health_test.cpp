// Health per (key, model): a model cooling on a key leaves the key serving
// every other model; one probe per pair after a cooldown; bounded memory.
#include "pool/key_pool.hpp"
#include "pool/model_health.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;

int take_probing_for(KeyPool& pool, const std::string& model, bool* probe = nullptr) {
  Selection selection = pool.acquire({}, &model);
  if (probe != nullptr) {
    *probe = selection.probe;
  }
  return selection.index ? static_cast<int>(*selection.index) : -1;
}

class ModelHealthTest : public ::testing::Test {
protected:
  test::FakeClock m_clock;
  KeyPool m_pool{make_keys({"a", "b"}), Strategy::ordered, m_clock};
  const std::string m_sick = "s04";
  const std::string m_fine = "ok";
};

TEST_F(ModelHealthTest, AModelCoolingOnAKeyLeavesItServingOtherModels) {
  m_pool.report(0, &m_sick, test::cool(429, 60s, true, "429", Scope::model));
  EXPECT_EQ(take_probing_for(m_pool, m_sick), 1);
  EXPECT_EQ(take_probing_for(m_pool, m_fine), 0);
  EXPECT_EQ(test::take(m_pool), 0); // a request naming no model sees the key's own state
  EXPECT_EQ(m_pool.health(0).state, KeyState::available);
  EXPECT_EQ(m_pool.counts().available, 2);
}

TEST_F(ModelHealthTest, NoEligibleKeyForAModelGivesItsOwnEarliestEnd) {
  m_pool.report(0, &m_sick, test::cool(429, 60s, true, "429", Scope::model));
  m_pool.report(1, &m_sick, test::cool(503, 30s, false, "503", Scope::model));
  Selection none = m_pool.acquire({}, &m_sick);
  EXPECT_FALSE(none.index);
  ASSERT_TRUE(none.earliest_available);
  EXPECT_EQ(*none.earliest_available, m_clock.now() + 30s);
  EXPECT_FALSE(m_pool.earliest_available()); // nothing cools for requests without a model
  EXPECT_EQ(take_probing_for(m_pool, m_fine), 0);
}

TEST_F(ModelHealthTest, AfterTheCooldownOneRequestProbesAndOthersUseOtherKeys) {
  m_pool.report(0, &m_sick, test::cool(429, 10s, true, "429", Scope::model));
  m_clock.advance(10s);
  bool probe = false;
  EXPECT_EQ(take_probing_for(m_pool, m_sick, &probe), 0);
  EXPECT_TRUE(probe);
  EXPECT_EQ(take_probing_for(m_pool, m_sick, &probe), 1); // the probe is in flight: another key
  EXPECT_FALSE(probe);
  m_pool.release(1);
  m_pool.release(0, &m_sick); // the probe ended without a verdict (its client left)
  EXPECT_EQ(take_probing_for(m_pool, m_sick, &probe), 0);
  EXPECT_TRUE(probe); // the next request probes again
}

TEST_F(ModelHealthTest, AWaitingRequestSeesAProbeInFlightAsBusy) {
  KeyPool one(make_keys({"only"}), Strategy::ordered, m_clock);
  one.report(0, &m_sick, test::cool(429, 1s, true, "429", Scope::model));
  m_clock.advance(1s);
  ASSERT_EQ(take_probing_for(one, m_sick), 0);
  Selection none = one.acquire({}, &m_sick);
  EXPECT_FALSE(none.index);
  EXPECT_TRUE(none.busy);
}

TEST_F(ModelHealthTest, ASuccessfulProbeClearsTheModelAndAFailedOneCountsForThePairOnly) {
  m_pool.report(0, &m_sick, test::cool(429, 10s, true, "429", Scope::model));
  EXPECT_EQ(m_pool.streaks(0, &m_sick).rate_limits, 1);
  m_clock.advance(10s);
  ASSERT_EQ(take_probing_for(m_pool, m_sick), 0);
  // The probe failed: the policy doubled the cooldown.
  m_pool.report(0, &m_sick, test::cool(429, 20s, true, "429", Scope::model));
  EXPECT_EQ(m_pool.streaks(0, &m_sick).rate_limits, 2);
  EXPECT_EQ(m_pool.streaks(0).rate_limits, 0);
  EXPECT_EQ(m_pool.streaks(0, &m_fine).rate_limits, 0);
  m_pool.release(0, &m_sick);
  m_clock.advance(20s);
  ASSERT_EQ(take_probing_for(m_pool, m_sick), 0);
  m_pool.report(0, &m_sick, test::success(200));
  m_pool.release(0, &m_sick);
  EXPECT_TRUE(m_pool.health(0).models.empty());
  EXPECT_EQ(m_pool.streaks(0, &m_sick).rate_limits, 0);
}

TEST_F(ModelHealthTest, AModelsFailureStreakCoolsOnlyThatModel) {
  for (int i = 0; i < 3; ++i) {
    m_pool.report(0, &m_sick, test::failure(503, i == 2 ? 30s : 0s, "503", Scope::model));
  }
  EXPECT_EQ(m_pool.streaks(0, &m_sick).failures, 3);
  EXPECT_EQ(m_pool.health(0).consecutive_failures, 0);
  EXPECT_EQ(take_probing_for(m_pool, m_sick), 1);
  EXPECT_EQ(take_probing_for(m_pool, m_fine), 0);
}

TEST(ModelTable, AFloodOfModelNamesIsCappedOldestCalmFirst) {
  test::FakeClock clock;
  ModelTable table;
  ModelHealth& sick = table.get("sick", clock.now());
  sick.cooled = true;
  sick.until = clock.now() + std::chrono::hours(1);
  for (int i = 0; i < 1000; ++i) {
    clock.advance(1ms);
    table.get("made-up-" + std::to_string(i), clock.now()).consecutive_failures = 1;
  }
  EXPECT_EQ(table.entries().size(), ModelTable::k_max_models);
  EXPECT_NE(table.find("sick"), nullptr); // a cooling model is kept over calm ones
  EXPECT_NE(table.find("made-up-999"), nullptr);
  EXPECT_EQ(table.find("made-up-0"), nullptr);
}

TEST(ModelTable, WhenEveryEntryCoolsTheOneEndingSoonestGoes) {
  test::FakeClock clock;
  ModelTable table;
  for (std::size_t i = 0; i < ModelTable::k_max_models; ++i) {
    ModelHealth& entry = table.get("m" + std::to_string(i), clock.now());
    entry.cooled = true;
    entry.until = clock.now() + std::chrono::seconds(100 + static_cast<int>(i));
  }
  table.get("new", clock.now());
  EXPECT_EQ(table.find("m0"), nullptr);
  EXPECT_NE(table.find("m1"), nullptr);
  EXPECT_NE(table.find("new"), nullptr);
}

} // namespace
} // namespace keyshim::pool
