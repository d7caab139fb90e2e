// key_cmd keys whose token is replaced while keyshim runs: what requests
// send, when the key is busy or cooling, and what a reload keeps.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_key;
using test::take;

class KeyPoolTokensTest : public ::testing::Test {
protected:
  config::KeyConfig command_key(const std::string& label, const std::string& token,
                                std::optional<milliseconds> refresh, std::optional<util::TimePoint> expires) {
    config::KeyConfig key = make_key(label, token);
    key.source = "key_cmd token-command";
    key.command = config::KeyCommand{{"token-command", label}, refresh, expires};
    return key;
  }

  // One run of key `index`'s command, if due, giving `token` (or failing).
  RefreshReport run(KeyPool& pool, std::size_t index, std::optional<std::string> token,
                    std::optional<util::TimePoint> expires = std::nullopt) {
    EXPECT_TRUE(pool.begin_refresh(index)) << "no run was due";
    RefreshResult result;
    if (token) {
      result.token = util::Secret(*token);
      result.expires = expires;
    } else {
      result.reason = "key_cmd: ERROR: reauthentication needed";
    }
    return pool.finish_refresh(index, std::move(result));
  }

  test::FakeClock m_clock;
};

TEST_F(KeyPoolTokensTest, RequestsSendTheNewTokenOnceARunGaveIt) {
  KeyPool pool({command_key("vertex", "tok-1", 50min, std::nullopt), make_key("static")}, Strategy::ordered,
               m_clock);
  EXPECT_EQ(pool.secret(0).secret->reveal(), "tok-1");
  EXPECT_EQ(pool.secret(1).generation, 0u);
  EXPECT_EQ(pool.next_refresh(), m_clock.now() + 50min);
  EXPECT_FALSE(pool.begin_refresh(0)) << "not due yet";
  m_clock.advance(50min);
  SecretInUse before = pool.secret(0);
  RefreshReport report = run(pool, 0, "tok-2");
  EXPECT_TRUE(report.changed);
  EXPECT_EQ(report.next, m_clock.now() + 50min);
  EXPECT_EQ(pool.secret(0).secret->reveal(), "tok-2");
  EXPECT_GT(pool.secret(0).generation, before.generation);
  EXPECT_EQ(before.secret->reveal(), "tok-1") << "a request holding the old token keeps it intact";
  EXPECT_EQ(pool.fingerprint(0), util::fingerprint_of("tok-2"));
  EXPECT_EQ(pool.snapshot().at(0).fingerprint, util::fingerprint_of("tok-2"));
}

TEST_F(KeyPoolTokensTest, AKeyWithoutAValidTokenIsBusyUntilItsRunEnds) {
  KeyPool pool({command_key("vertex", "tok-1", std::nullopt, m_clock.now() + 1h)}, Strategy::ordered,
               m_clock);
  m_clock.advance(55min);
  ASSERT_TRUE(pool.begin_refresh(0));
  EXPECT_EQ(take(pool), 0) << "the old token serves while the run is going";
  pool.release(0);
  m_clock.advance(5min);
  Selection selection = pool.acquire({});
  EXPECT_FALSE(selection.index);
  EXPECT_TRUE(selection.busy) << "a request may wait (max_wait) for the token";
  EXPECT_TRUE(pool.awaiting_secret(0));
  pool.finish_refresh(0, RefreshResult{util::Secret("tok-2"), m_clock.now() + 1h, ""});
  EXPECT_EQ(take(pool), 0);
  EXPECT_FALSE(pool.awaiting_secret(0));
}

TEST_F(KeyPoolTokensTest, AFailedRunLeavesAKeyWithoutATokenCoolingWithItsReason) {
  KeyPool pool({command_key("vertex", "tok-1", std::nullopt, m_clock.now() + 1h)}, Strategy::ordered,
               m_clock);
  m_clock.advance(55min);
  RefreshReport early = run(pool, 0, std::nullopt);
  EXPECT_FALSE(early.cooling) << "the old token is still good";
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_EQ(pool.snapshot().at(0).token->error, "key_cmd: ERROR: reauthentication needed");
  m_clock.set(*pool.next_refresh());
  m_clock.advance(5min); // the token has expired meanwhile
  RefreshReport late = run(pool, 0, std::nullopt);
  EXPECT_TRUE(late.cooling);
  KeyHealth health = pool.health(0);
  EXPECT_EQ(health.state, KeyState::cooling);
  EXPECT_EQ(health.reason, "key_cmd: ERROR: reauthentication needed");
  EXPECT_EQ(health.until, *late.next);
  EXPECT_FALSE(pool.awaiting_secret(0)) << "cooling: the run failed, nothing to wait for";
  m_clock.set(*late.next);
  run(pool, 0, "tok-2", m_clock.now() + 1h);
  EXPECT_EQ(pool.health(0).state, KeyState::available);
  EXPECT_EQ(pool.health(0).reason, "");
}

TEST_F(KeyPoolTokensTest, TheReasonNeverCarriesTheToken) {
  KeyPool pool({command_key("vertex", "tok-secret-1", 1min, std::nullopt)}, Strategy::ordered, m_clock);
  m_clock.advance(1min);
  ASSERT_TRUE(pool.begin_refresh(0));
  pool.finish_refresh(0, RefreshResult{std::nullopt, std::nullopt, "key_cmd: token tok-secret-1 revoked"});
  EXPECT_EQ(pool.snapshot().at(0).token->error,
            "key_cmd: token " + util::fingerprint_of("tok-secret-1") + " revoked");
}

TEST_F(KeyPoolTokensTest, A401StopsTheTokenAndAsksForARun) {
  KeyPool pool({command_key("vertex", "tok-1", std::nullopt, std::nullopt), make_key("static")},
               Strategy::ordered, m_clock);
  EXPECT_FALSE(pool.next_refresh());
  EXPECT_FALSE(pool.reject_secret(1, 0)) << "a key without a command has nothing to refresh";
  EXPECT_TRUE(pool.reject_secret(0, pool.secret(0).generation));
  EXPECT_TRUE(pool.awaiting_secret(0));
  EXPECT_EQ(take(pool), 1) << "other requests skip the refused token";
  EXPECT_EQ(pool.next_refresh(), m_clock.now());
  run(pool, 0, "tok-2");
  EXPECT_EQ(pool.secret(0).secret->reveal(), "tok-2");
}

TEST_F(KeyPoolTokensTest, ADisabledKeysCommandDoesNotRun) {
  KeyPool pool({command_key("vertex", "tok-1", 1min, std::nullopt)}, Strategy::ordered, m_clock);
  pool.report(0, nullptr, test::disable(401, "401 unauthorized"));
  m_clock.advance(1min);
  EXPECT_FALSE(pool.begin_refresh(0));
  EXPECT_FALSE(pool.next_refresh()) << "nothing scheduled: the refresher must not wake for it";
}

TEST_F(KeyPoolTokensTest, AReloadKeepsTheHealthOfAKeyByTheTokenItSends) {
  KeyPool old_pool({command_key("vertex", "tok-1", 1min, std::nullopt)}, Strategy::ordered, m_clock);
  old_pool.report(0, nullptr, test::success(200));
  m_clock.advance(1min);
  run(old_pool, 0, "tok-2");
  // The reload's run printed tok-2 again (gcloud hands out its cached token).
  auto pool =
      KeyPool::reloaded(old_pool, {command_key("vertex", "tok-2", 30min, std::nullopt)}, Strategy::ordered);
  EXPECT_EQ(pool->health(0).ok_count, 1u);
  EXPECT_EQ(pool->next_refresh(), m_clock.now() + 30min);
  EXPECT_EQ(old_pool.secret(0).secret->reveal(), "tok-2") << "requests on the old pool share the token";
  // A different token from the reload's run is a new key, as for any key.
  auto changed =
      KeyPool::reloaded(*pool, {command_key("vertex", "tok-3", 30min, std::nullopt)}, Strategy::ordered);
  EXPECT_EQ(changed->health(0).ok_count, 0u);
}

} // namespace
} // namespace keyshim::pool
