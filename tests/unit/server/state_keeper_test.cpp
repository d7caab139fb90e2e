// StateKeeper: the state file is written when the keys' health changed, by
// its own thread at its interval and at stop, and read back at start.
#include "server/state_keeper.hpp"

#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <thread>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

class OneState final : public relay::StateSource {
public:
  explicit OneState(std::shared_ptr<const relay::PoolState> state) : m_state(std::move(state)) {}
  std::shared_ptr<const relay::PoolState> current() const override { return m_state; }

private:
  std::shared_ptr<const relay::PoolState> m_state;
};

// A state serving one pool of one key, "k", on `clock`.
std::shared_ptr<const relay::PoolState> serving_one_key(util::Clock& clock, bool keep_state = true) {
  auto config = std::make_shared<config::Config>();
  config->server.state = keep_state;
  config::PoolConfig pool;
  pool.name = "default";
  config::KeyConfig key;
  key.label = "k";
  key.secret = util::Secret("sk-test-state-keeper-0123456789");
  key.base_url = config::UpstreamUrl{"http", "127.0.0.1", 9, ""};
  pool.keys.push_back(key);
  config->pools.push_back(pool);
  auto keys = std::make_shared<pool::KeyPool>(pool.keys, config::Strategy::ordered, clock);
  return std::make_shared<relay::PoolState>(relay::PoolState::serving(config, {keys}));
}

void cool_the_key(const relay::PoolState& state) {
  pool::Report report;
  report.change = pool::Change::cool;
  report.status = 429;
  report.cooldown = 1h;
  report.reason = "429 Retry-After";
  state.pools[0].keys->report(0, nullptr, report);
}

class StateKeeperTest : public ::testing::Test {
protected:
  std::string path() const { return m_dir.path() + "/keyshim/state.json"; }
  test::FakeClock m_clock;
  test::TempDir m_dir;
};

TEST_F(StateKeeperTest, ItsThreadSavesAChangeWithinAnInterval) {
  OneState states(serving_one_key(m_clock));
  StateKeeper keeper(path(), states, 10ms);
  keeper.start();
  cool_the_key(*states.current());
  bool saved = false;
  for (int i = 0; i < 500 && !saved; ++i) { // up to 5 s
    saved = test::read_file(path()).find("\"cooling\"") != std::string::npos;
    if (!saved) {
      std::this_thread::sleep_for(10ms);
    }
  }
  keeper.stop();
  EXPECT_TRUE(saved) << test::read_file(path());
}

TEST_F(StateKeeperTest, NothingIsWrittenWhenNothingChanged) {
  OneState states(serving_one_key(m_clock));
  StateKeeper keeper(path(), states);
  keeper.save();
  ASSERT_NE(test::read_file(path()), "");
  ASSERT_EQ(::unlink(path().c_str()), 0);
  keeper.save();
  EXPECT_EQ(test::read_file(path()), "") << "the same health is not written again";
  cool_the_key(*states.current());
  keeper.save();
  EXPECT_NE(test::read_file(path()), "");
}

TEST_F(StateKeeperTest, ANewStartTakesBackWhatTheLastOneSaved) {
  {
    OneState states(serving_one_key(m_clock));
    cool_the_key(*states.current());
    StateKeeper keeper(path(), states);
    keeper.stop(); // the end of a drain
  }
  OneState states(serving_one_key(m_clock));
  StateKeeper keeper(path(), states);
  keeper.restore();
  EXPECT_EQ(states.current()->pools[0].keys->health(0).state, pool::KeyState::cooling);
}

TEST_F(StateKeeperTest, StateFalseReadsAndWritesNothing) {
  OneState states(serving_one_key(m_clock, false));
  cool_the_key(*states.current());
  StateKeeper keeper(path(), states);
  keeper.start();
  keeper.stop();
  EXPECT_EQ(test::read_file(path()), "");
}

} // namespace
} // namespace keyshim::server
