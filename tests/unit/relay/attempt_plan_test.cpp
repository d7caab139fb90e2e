// The attempt loop's memory and decisions, driven directly: which keys the
// next attempt may use, the one repeat of a key, the answer when keys run
// out, and how long a request waits for a key, on fake clocks.
#include "relay/attempt_plan.hpp"

#include "support/fake_clock.hpp"

#include <memory>

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using policy::Action;

std::vector<bool> bits(std::initializer_list<int> values) {
  std::vector<bool> out;
  for (int v : values) {
    out.push_back(v != 0);
  }
  return out;
}

TEST(AttemptPlan, TheFirstAttemptMayUseEveryKey) {
  AttemptPlan plan(3, 3);
  EXPECT_EQ(plan.mask(), bits({0, 0, 0}));
  EXPECT_EQ(plan.attempts(), 0);
  EXPECT_FALSE(plan.out_of_attempts());
}

TEST(AttemptPlan, AFailedKeyIsNotTriedAgain) {
  AttemptPlan plan(3, 3);
  plan.begin();
  plan.after_failure(1, Action::next_key);
  EXPECT_EQ(plan.mask(), bits({0, 1, 0}));
}

TEST(AttemptPlan, RetrySameKeyRepeatsTheKeyOnceOnly) {
  AttemptPlan plan(3, 5);
  plan.begin();
  plan.after_failure(2, Action::retry_same_key);
  EXPECT_EQ(plan.mask(), bits({1, 1, 0})) << "only the repeated key";
  plan.begin();
  plan.after_failure(2, Action::retry_same_key);
  EXPECT_EQ(plan.mask(), bits({0, 0, 1})) << "a second transient failure excludes it";
}

// A request that cooled its only key (a 429 with Retry-After: 1) waits for
// that key, even when the cooldown is over before it decides to wait (a
// slow machine): only once per failure, and never a key it did not cool.
TEST(AttemptPlan, AKeyTheRequestCooledIsReadmittedOnceToWaitFor) {
  AttemptPlan plan(2, 5);
  plan.begin();
  plan.after_failure(0, policy::Action::next_key, true);
  plan.begin();
  plan.after_failure(1, policy::Action::next_key, false);
  EXPECT_EQ(plan.mask(), bits({1, 1}));
  EXPECT_TRUE(plan.readmit_cooled());
  EXPECT_EQ(plan.mask(), bits({0, 1}));
  EXPECT_FALSE(plan.readmit_cooled());
}

TEST(AttemptPlan, ARepeatedKeyThatCooledIsExcluded) {
  AttemptPlan plan(2, 3);
  EXPECT_FALSE(plan.drop_repeat());
  plan.begin();
  plan.after_failure(0, Action::retry_same_key);
  EXPECT_TRUE(plan.drop_repeat());
  EXPECT_EQ(plan.mask(), bits({1, 0}));
  EXPECT_FALSE(plan.drop_repeat());
}

config::KeyConfig key_named(const std::string& label) {
  config::KeyConfig key;
  key.label = label;
  key.secret = util::Secret("sk-plan-" + label + "-0123456789abcdef");
  return key;
}

// A reload while the request waited: a key it excluded stays excluded
// wherever the new file puts it, a new key is open to it, its attempts count.
TEST(AttemptPlan, AReloadMovesWhatTheRequestKnowsOfAKeyWithTheKey) {
  test::FakeClock clock;
  pool::KeyPool before({key_named("a"), key_named("b")}, config::Strategy::ordered, clock);
  std::shared_ptr<pool::KeyPool> after = pool::KeyPool::reloaded(
      before, {key_named("c"), key_named("b"), key_named("a")}, config::Strategy::ordered);
  AttemptPlan plan(2, 4);
  plan.begin();
  plan.after_failure(0, Action::next_key); // "a" failed for this request
  plan.rekey(before, *after);
  EXPECT_EQ(plan.mask(), bits({0, 0, 1}));
  EXPECT_EQ(plan.attempts(), 1);
}

TEST(AttemptPlan, AReloadKeepsTheRepeatOfAKeyThatIsStillThere) {
  test::FakeClock clock;
  pool::KeyPool before({key_named("a"), key_named("b")}, config::Strategy::ordered, clock);
  std::shared_ptr<pool::KeyPool> after =
      pool::KeyPool::reloaded(before, {key_named("b")}, config::Strategy::ordered);
  AttemptPlan plan(2, 4);
  plan.begin();
  plan.after_failure(1, Action::retry_same_key); // "b" is to be repeated once
  plan.rekey(before, *after);
  EXPECT_EQ(plan.mask(), bits({0}));
  plan.begin();
  plan.after_failure(0, Action::retry_same_key); // already repeated: excluded now
  EXPECT_EQ(plan.mask(), bits({1}));
}

TEST(AttemptPlan, MaxAttemptsBoundsTheAttempts) {
  AttemptPlan plan(5, 2);
  plan.begin();
  EXPECT_FALSE(plan.out_of_attempts());
  plan.begin();
  EXPECT_TRUE(plan.out_of_attempts());
  EXPECT_EQ(plan.attempts(), 2);
}

TEST(AttemptPlan, OutOfKeysTheLastUpstreamErrorIsTheAnswer) {
  AttemptPlan plan(2, 3);
  plan.note_tried("a: 429");
  Answer first;
  first.status = 429;
  plan.note_error(first);
  Answer second;
  second.status = 503;
  second.body = "overloaded";
  plan.note_error(second);
  EXPECT_EQ(plan.final_answer().status, 503);
  EXPECT_EQ(plan.final_answer().body, "overloaded");
  EXPECT_EQ(plan.last_error().status, 503);
}

TEST(AttemptPlan, WithOnlyTransportFailuresThe502NamesWhatEachKeyGot) {
  AttemptPlan plan(2, 3);
  plan.note_tried("a: connect error");
  plan.note_tried("b: tls error");
  Answer answer = plan.final_answer();
  EXPECT_EQ(answer.status, 502);
  EXPECT_NE(answer.body.find("a: connect error; b: tls error"), std::string::npos) << answer.body;
}

class AttemptPlanWait : public ::testing::Test {
protected:
  std::optional<AttemptPlan::Wait> wait_for(const pool::Selection& selection) {
    return m_plan.wait_for(selection, 10s, m_mono.now(), m_wall.now());
  }
  pool::Selection busy() {
    pool::Selection s;
    s.busy = true;
    return s;
  }
  pool::Selection cooling_for(std::chrono::milliseconds left) {
    pool::Selection s;
    s.earliest_available = m_wall.now() + left;
    return s;
  }

  test::FakeMonoClock m_mono;
  test::FakeClock m_wall;
  AttemptPlan m_plan{2, 3};
};

TEST_F(AttemptPlanWait, ABusyKeyIsWaitedForUntilMaxWait) {
  auto wait = wait_for(busy());
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait->until, m_mono.now() + 10s);
  EXPECT_EQ(wait->due, wait->until);
}

TEST_F(AttemptPlanWait, ACooldownEndingWithinMaxWaitIsWaitedForToItsEnd) {
  auto wait = wait_for(cooling_for(2500ms));
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait->due, m_mono.now() + 2500ms);
  EXPECT_EQ(wait->until, m_mono.now() + 10s);
}

TEST_F(AttemptPlanWait, ACooldownEndingAfterMaxWaitIsNotWaitedFor) {
  EXPECT_FALSE(wait_for(cooling_for(11s)));
}

TEST_F(AttemptPlanWait, NothingToWaitForWhenEveryKeyIsDisabled) {
  EXPECT_FALSE(wait_for(pool::Selection{}));
}

TEST_F(AttemptPlanWait, WithoutMaxWaitNoRequestWaits) {
  EXPECT_FALSE(m_plan.wait_for(busy(), 0s, m_mono.now(), m_wall.now()));
  EXPECT_FALSE(m_plan.has_waited());
}

TEST_F(AttemptPlanWait, MaxWaitRunsFromTheFirstWait) {
  MonoTime first = m_mono.now();
  ASSERT_TRUE(wait_for(busy()));
  m_mono.advance(4s);
  m_wall.advance(4s);
  auto again = wait_for(busy());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->until, first + 10s);
  EXPECT_EQ(m_plan.waited(m_mono.now()), 4s);
  m_mono.advance(6s);
  EXPECT_FALSE(wait_for(busy())) << "max_wait is over";
}

TEST_F(AttemptPlanWait, OnlyExcludedKeysThatAreCoolingAreReadmitted) {
  AttemptPlan plan(3, 3);
  plan.after_failure(0, Action::next_key);
  plan.after_failure(2, Action::next_key);
  plan.readmit([](std::size_t i) { return i == 2; });
  EXPECT_EQ(plan.mask(), bits({1, 0, 0}));
}

} // namespace
} // namespace keyshim::relay

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using policy::Action;

const MonoTime k_t0 = MonoTime(std::chrono::hours(1));

TEST(AttemptPlanRenewal, TheRetryWithANewTokenIsOnTheSameKeyAndNotCounted) {
  AttemptPlan plan(2, 1);
  plan.begin();
  EXPECT_TRUE(plan.out_of_attempts());
  ASSERT_TRUE(plan.may_renew(0));
  plan.renew(0, k_t0 + 15s);
  EXPECT_FALSE(plan.out_of_attempts()) << "max_attempts = 1 still gets its retry";
  EXPECT_EQ(plan.mask(), std::vector<bool>({false, true}));
  EXPECT_EQ(plan.renewing(), 0u);
  EXPECT_EQ(plan.renewal_until(), k_t0 + 15s);
  plan.begin();
  EXPECT_EQ(plan.attempts(), 1);
  EXPECT_EQ(plan.attempts_made(), 2);
  EXPECT_FALSE(plan.renewing());
  EXPECT_TRUE(plan.out_of_attempts());
  EXPECT_FALSE(plan.may_renew(0)) << "once per key and request";
  EXPECT_TRUE(plan.may_renew(1));
}

TEST(AttemptPlanRenewal, AKeyWhoseTokenDidNotComeIsDroppedLikeARepeat) {
  AttemptPlan plan(2, 4);
  plan.begin();
  plan.renew(0, k_t0 + 15s);
  EXPECT_TRUE(plan.drop_repeat());
  EXPECT_FALSE(plan.renewing());
  EXPECT_EQ(plan.mask(), std::vector<bool>({true, false}));
  EXPECT_EQ(plan.attempts(), 1);
}

} // namespace
} // namespace keyshim::relay
