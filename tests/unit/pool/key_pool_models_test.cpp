// models / exclude_models in selection: a key is never chosen for a model it
// does not serve, whatever its health, and the pool says when no key serves
// a model at all.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;

// k0 serves every model but gpt-5*; k1 only gpt-5* and o3; k2 every model.
std::vector<config::KeyConfig> restricted_keys() {
  std::vector<config::KeyConfig> keys = test::make_keys({"k0", "k1", "k2"});
  keys[0].models.exclude_models = {"gpt-5*"};
  keys[1].models.models = std::vector<std::string>{"gpt-5*", "o3"};
  return keys;
}

int take_for(KeyPool& pool, const std::string& model) {
  Selection selection = pool.acquire({}, &model);
  return selection.index ? static_cast<int>(*selection.index) : -1;
}

TEST(KeyPoolModels, AKeyIsNeverChosenForAModelItDoesNotServe) {
  test::FakeClock clock;
  KeyPool pool(restricted_keys(), Strategy::round_robin, clock);
  for (int i = 0; i < 12; ++i) {
    int gpt5 = take_for(pool, "gpt-5-codex");
    EXPECT_TRUE(gpt5 == 1 || gpt5 == 2) << gpt5;
    int gpt4 = take_for(pool, "gpt-4o");
    EXPECT_TRUE(gpt4 == 0 || gpt4 == 2) << gpt4;
  }
}

TEST(KeyPoolModels, ARequestWithoutAModelMayTakeAnyKey) {
  test::FakeClock clock;
  KeyPool pool(restricted_keys(), Strategy::round_robin, clock);
  EXPECT_EQ(test::take(pool), 0);
  EXPECT_EQ(test::take(pool), 1);
  EXPECT_EQ(test::take(pool), 2);
}

TEST(KeyPoolModels, TheOnlyKeysServingAModelCoolingIsAWaitNotAnAbsence) {
  test::FakeClock clock;
  KeyPool pool(restricted_keys(), Strategy::ordered, clock);
  pool.report(1, nullptr, test::cool(429, 30s, true, "429"));
  pool.report(2, nullptr, test::cool(429, 10s, true, "429"));
  const std::string model = "gpt-5";
  Selection none = pool.acquire({}, &model);
  EXPECT_FALSE(none.index); // k0 is free but does not serve gpt-5
  EXPECT_TRUE(pool.serves(&model));
  ASSERT_TRUE(none.earliest_available);
  EXPECT_EQ(*none.earliest_available, clock.now() + 10s);
}

TEST(KeyPoolModels, CooldownsOfKeysThatDoNotServeTheModelDoNotCount) {
  test::FakeClock clock;
  KeyPool pool(restricted_keys(), Strategy::ordered, clock);
  pool.report(0, nullptr, test::cool(429, 5s, true, "429"));
  pool.report(2, nullptr, test::disable(401, "401"));
  const std::string model = "gpt-4o";
  EXPECT_EQ(pool.earliest_available(&model), clock.now() + 5s);
  const std::string other = "gpt-5";
  pool.report(1, nullptr, test::disable(401, "401"));
  EXPECT_FALSE(pool.earliest_available(&other)); // k0's cooldown frees nothing for gpt-5
}

TEST(KeyPoolModels, ServesSaysWhetherAnyKeyOfThePoolServesAModel) {
  test::FakeClock clock;
  std::vector<config::KeyConfig> keys = test::make_keys({"a", "b"});
  keys[0].models.models = std::vector<std::string>{"claude-*"};
  keys[1].models.exclude_models = {"claude-opus*", "gpt-*"};
  KeyPool pool(std::move(keys), Strategy::ordered, clock);
  const std::string opus = "claude-opus-4-1";
  const std::string gpt = "gpt-4o";
  const std::string gemini = "gemini-2.5-pro";
  EXPECT_TRUE(pool.serves(&opus));
  EXPECT_FALSE(pool.serves(&gpt));
  EXPECT_TRUE(pool.serves(&gemini));
  EXPECT_TRUE(pool.serves(nullptr));
  EXPECT_EQ(take_for(pool, opus), 0);
  EXPECT_EQ(take_for(pool, gpt), -1);
  EXPECT_EQ(take_for(pool, gemini), 1);
}

TEST(KeyPoolModels, APoolWithoutListsServesEveryModel) {
  test::FakeClock clock;
  KeyPool pool(test::make_keys({"a"}), Strategy::ordered, clock);
  const std::string model = "anything-at-all";
  EXPECT_TRUE(pool.serves(&model));
  EXPECT_EQ(take_for(pool, model), 0);
}

TEST(KeyPoolModels, TheSnapshotShowsWhatEachKeyServes) {
  test::FakeClock clock;
  KeyPool pool(restricted_keys(), Strategy::ordered, clock);
  std::vector<KeySnapshot> snapshot = pool.snapshot();
  EXPECT_EQ(snapshot.at(0).models.text(), "every model except gpt-5*");
  EXPECT_EQ(snapshot.at(1).models.text(), "gpt-5*, o3");
  EXPECT_FALSE(snapshot.at(2).models.restricted());
}

} // namespace
} // namespace keyshim::pool
