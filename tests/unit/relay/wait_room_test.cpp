// Requests waiting for a key: first come, first served, and every way out.
// Waiters here take keys from a real KeyPool on a fake clock, as exchanges do.
#include "relay/wait_room.hpp"

#include "pool/key_pool.hpp"
#include "support/fake_clock.hpp"
#include "support/pool_reports.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

config::KeyConfig one_slot_key(const std::string& label) {
  config::KeyConfig key;
  key.label = label;
  key.secret = util::Secret("sk-wait-" + label + "-0123456789");
  key.max_concurrent = 1;
  return key;
}

// Records the order in which waiters got a key, and what else happened.
struct Journal {
  std::vector<std::string> served;
  std::vector<std::string> shut_down;
};

class PoolWaiter : public Waiter {
public:
  PoolWaiter(std::string name, pool::KeyPool& pool, Journal& journal)
      : m_name(std::move(name)), m_pool(pool), m_journal(journal) {}

  bool retry() override {
    ++tries;
    pool::Selection selection = m_pool.acquire({});
    if (!selection.index) {
      return false;
    }
    held = selection.index;
    m_journal.served.push_back(m_name);
    return true;
  }
  void shutting_down() override { m_journal.shut_down.push_back(m_name); }

  std::optional<std::size_t> held;
  int tries = 0;

private:
  std::string m_name;
  pool::KeyPool& m_pool;
  Journal& m_journal;
};

class WaitRoomTest : public ::testing::Test {
protected:
  std::shared_ptr<PoolWaiter> waiter(const std::string& name) {
    auto w = std::make_shared<PoolWaiter>(name, m_pool, m_journal);
    m_room.enter("openai", w);
    return w;
  }

  test::FakeClock m_clock;
  pool::KeyPool m_pool{{one_slot_key("only")}, config::Strategy::ordered, m_clock};
  Journal m_journal;
  WaitRoom m_room;
};

TEST_F(WaitRoomTest, AFreedSlotGoesToTheWaitersInArrivalOrder) {
  ASSERT_TRUE(m_pool.acquire({}).index); // the one slot is taken
  auto first = waiter("first");
  auto second = waiter("second");
  auto third = waiter("third");
  m_room.wake("openai");
  EXPECT_TRUE(m_journal.served.empty());

  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"first"});
  EXPECT_EQ(m_room.waiting("openai"), 2u);

  m_pool.release(*first->held);
  m_room.wake("openai");
  m_pool.release(*second->held);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_TRUE(m_room.empty());
}

TEST_F(WaitRoomTest, ACooldownEndingLetsTheFirstWaiterInOnTheFakeClock) {
  m_pool.report(0, nullptr, test::cool(429, 2s, true, "429 Retry-After"));
  auto first = waiter("first");
  auto second = waiter("second");
  m_clock.advance(1999ms);
  m_room.wake("openai");
  EXPECT_TRUE(m_journal.served.empty());
  m_clock.advance(1ms);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"first"});
  EXPECT_EQ(second->tries, 2); // tried on each wake, in its place behind the first
}

TEST_F(WaitRoomTest, AWaiterThatLeftIsNeverOfferedAKey) {
  ASSERT_TRUE(m_pool.acquire({}).index);
  auto gone = waiter("gone");
  auto stays = waiter("stays");
  m_room.leave("openai", gone.get()); // its client hung up
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"stays"});
  EXPECT_EQ(gone->tries, 0);
}

TEST_F(WaitRoomTest, ADestroyedWaiterIsDroppedFromTheQueue) {
  ASSERT_TRUE(m_pool.acquire({}).index);
  waiter("dropped"); // nobody holds it: its exchange is gone
  auto stays = waiter("stays");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"stays"});
  EXPECT_TRUE(m_room.empty());
}

TEST_F(WaitRoomTest, EnteringTwiceKeepsTheFirstPlace) {
  ASSERT_TRUE(m_pool.acquire({}).index);
  auto first = waiter("first");
  auto second = waiter("second");
  m_room.enter("openai", first); // a retry that waits again
  EXPECT_EQ(m_room.waiting("openai"), 2u);
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"first"});
}

TEST_F(WaitRoomTest, PoolsWaitSeparately) {
  auto other = std::make_shared<PoolWaiter>("anthropic-waiter", m_pool, m_journal);
  ASSERT_TRUE(m_pool.acquire({}).index);
  m_room.enter("anthropic", other);
  auto mine = waiter("openai-waiter");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"openai-waiter"});
  EXPECT_EQ(m_room.waiting("anthropic"), 1u);
  EXPECT_EQ(other->tries, 0);
}

// A retry that fails at once releases its key and wakes the room from inside
// the wake: the next waiter is still served, in order, without recursion.
TEST_F(WaitRoomTest, AWakeFromInsideARetryIsAnotherPassNotARecursion) {
  class FailingAtOnce : public PoolWaiter {
  public:
    FailingAtOnce(pool::KeyPool& pool, Journal& journal, WaitRoom& room)
        : PoolWaiter("fails", pool, journal), m_pool(pool), m_room(room) {}
    bool retry() override {
      if (!PoolWaiter::retry()) {
        return false;
      }
      m_pool.release(*held); // its attempt failed before any byte: the key is free again
      m_room.wake("openai");
      return true;
    }

  private:
    pool::KeyPool& m_pool;
    WaitRoom& m_room;
  };
  ASSERT_TRUE(m_pool.acquire({}).index);
  auto fails = std::make_shared<FailingAtOnce>(m_pool, m_journal, m_room);
  m_room.enter("openai", fails);
  auto next = waiter("next");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"fails", "next"}));
  EXPECT_TRUE(m_room.empty());
}

TEST_F(WaitRoomTest, ShutdownTellsEveryWaiterAndEmptiesTheRoom) {
  auto a = waiter("a");
  auto b = std::make_shared<PoolWaiter>("b", m_pool, m_journal);
  m_room.enter("anthropic", b);
  m_room.close_all();
  EXPECT_EQ(m_journal.shut_down.size(), 2u);
  EXPECT_TRUE(m_room.empty());
  m_room.wake("openai"); // nothing left to wake
  EXPECT_EQ(a->tries, 0);
}

} // namespace
} // namespace keyshim::relay
