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
  int tries = 0; // retries asked of every waiter together
};

// A waiter as an exchange is one: it takes a key for its model (or none)
// from a real pool when asked, and stays in its place when there is none.
class PoolWaiter : public Waiter {
public:
  PoolWaiter(std::string name, pool::KeyPool& pool, Journal& journal, std::string model = "")
      : m_name(std::move(name)), m_model(std::move(model)), m_pool(pool), m_journal(journal) {}

  bool retry() override {
    ++tries;
    ++m_journal.tries;
    pool::Selection selection = m_pool.acquire({}, m_model.empty() ? nullptr : &m_model);
    if (!selection.index) {
      return false;
    }
    held = selection.index;
    m_journal.served.push_back(m_name);
    return true;
  }
  void shutting_down() override { m_journal.shut_down.push_back(m_name); }

  WaitRoom::Place place;
  std::optional<std::size_t> held;
  int tries = 0;

private:
  std::string m_name;
  std::string m_model;
  pool::KeyPool& m_pool;
  Journal& m_journal;
};

class WaitRoomTest : public ::testing::Test {
protected:
  std::shared_ptr<PoolWaiter> waiter(const std::string& name, const std::string& model = "",
                                     const std::string& pool = "openai") {
    auto w = std::make_shared<PoolWaiter>(name, m_pool, m_journal, model);
    w->place.pool = pool;
    w->place.lane = model;
    m_room.enter(w->place, w);
    return w;
  }
  // The one slot is taken by a request that is not waiting.
  void take_the_slot() { ASSERT_TRUE(m_pool.acquire({}).index); }

  test::FakeClock m_clock;
  test::FakeMonoClock m_mono;
  pool::KeyPool m_pool{{one_slot_key("only")}, config::Strategy::ordered, m_clock};
  Journal m_journal;
  WaitRoom m_room{m_mono};
};

TEST_F(WaitRoomTest, AFreedSlotGoesToTheWaitersInArrivalOrder) {
  take_the_slot();
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

// The quadratic room asked every waiter on every wake (1,800 waiters: 11.6 s
// to drain after the key was freed). Now a wake asks the first waiter of the
// lane and stops when it finds no key: those behind it would find none either.
TEST_F(WaitRoomTest, AWakeAsksOnlyTheFirstWaiterWhenNoKeyIsFree) {
  take_the_slot();
  std::vector<std::shared_ptr<PoolWaiter>> waiters;
  for (int i = 0; i < 1000; ++i) {
    waiters.push_back(waiter("w" + std::to_string(i)));
  }
  for (int wake = 0; wake < 100; ++wake) {
    m_room.wake("openai");
  }
  EXPECT_EQ(m_journal.tries, 100);
  EXPECT_EQ(waiters[0]->tries, 100);
  EXPECT_EQ(waiters[1]->tries, 0);
  EXPECT_EQ(m_room.waiting("openai"), 1000u);
}

TEST_F(WaitRoomTest, AReleaseServesOneWaiterAndAsksOneMoreAtMost) {
  take_the_slot();
  std::vector<std::shared_ptr<PoolWaiter>> waiters;
  for (int i = 0; i < 1000; ++i) {
    waiters.push_back(waiter("w" + std::to_string(i)));
  }
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    const int before = m_journal.tries;
    m_pool.release(0); // the request holding the key is done
    m_room.wake("openai");
    ASSERT_EQ(m_journal.served.size(), i + 1);
    EXPECT_EQ(m_journal.served.back(), "w" + std::to_string(i)); // first come, first served
    EXPECT_LE(m_journal.tries - before, 2);
  }
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
  EXPECT_EQ(second->tries, 1); // asked once the first was served, and it stays in its place
  EXPECT_EQ(m_room.waiting("openai"), 1u);
}

// A model's cooldown closes the key to that model only: the waiter for
// another model behind it is served, and the first keeps its place.
TEST_F(WaitRoomTest, AWaiterForACoolingModelDoesNotHoldUpOneForAnotherModel) {
  const std::string cooling = "model-a";
  take_the_slot();
  m_pool.report(0, &cooling, test::cool(429, 30s, true, "429 Retry-After", pool::Scope::model));
  auto a = waiter("a", "model-a");
  auto b = waiter("b", "model-b");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"b"});
  EXPECT_EQ(m_room.waiting("openai"), 1u);
  m_pool.release(*b->held);
  m_clock.advance(30s);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"b", "a"}));
}

// Lanes for different models share the pool's order: when they compete for
// the same slot, the oldest waiter of any lane goes first.
TEST_F(WaitRoomTest, LanesForDifferentModelsAreServedInArrivalOrderAcrossThem) {
  take_the_slot();
  auto first = waiter("first", "model-b");
  auto second = waiter("second", "model-a");
  auto third = waiter("third", "model-b");
  for (const auto& w : {first, second, third}) {
    m_pool.release(0);
    m_room.wake("openai");
    EXPECT_EQ(m_journal.served.back(), [&] {
      return w == first ? "first" : w == second ? "second" : "third";
    }());
  }
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"first", "second", "third"}));
}

TEST_F(WaitRoomTest, AWaiterThatLeftIsNeverOfferedAKey) {
  take_the_slot();
  auto gone = waiter("gone");
  auto stays = waiter("stays");
  m_room.leave(gone->place); // its client hung up
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"stays"});
  EXPECT_EQ(gone->tries, 0);
  m_room.leave(gone->place); // leaving twice does nothing
  EXPECT_TRUE(m_room.empty());
}

TEST_F(WaitRoomTest, ADestroyedWaiterIsDroppedFromTheQueue) {
  take_the_slot();
  waiter("dropped"); // nobody holds it: its exchange is gone
  auto stays = waiter("stays");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"stays"});
  EXPECT_TRUE(m_room.empty());
}

TEST_F(WaitRoomTest, EnteringTwiceKeepsTheFirstPlace) {
  take_the_slot();
  auto first = waiter("first");
  auto second = waiter("second");
  m_room.enter(first->place, first); // a retry that waits again
  EXPECT_EQ(m_room.waiting("openai"), 2u);
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"first"});
}

// A request that got a key, was refused (a 429) and waits again keeps its
// number: it is older than the requests that came while it was trying.
TEST_F(WaitRoomTest, AWaiterThatWaitsAgainGoesBackToItsAgeNotToTheBack) {
  take_the_slot();
  auto old = waiter("old");
  m_pool.release(0);
  m_room.wake("openai"); // served: it tries with the key
  ASSERT_EQ(m_journal.served, std::vector<std::string>{"old"});
  auto newer = waiter("newer");
  m_room.enter(old->place, old); // its attempt failed: it waits again
  m_pool.release(*old->held);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"old", "old"}));
  EXPECT_EQ(newer->tries, 1);
}

TEST_F(WaitRoomTest, PoolsWaitSeparately) {
  take_the_slot();
  auto other = waiter("anthropic-waiter", "", "anthropic");
  auto mine = waiter("openai-waiter");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"openai-waiter"});
  EXPECT_EQ(m_room.waiting("anthropic"), 1u);
  EXPECT_EQ(other->tries, 0);
}

TEST_F(WaitRoomTest, AReloadWakesTheWaitersOfEveryPool) {
  take_the_slot();
  auto other = waiter("anthropic-waiter", "", "anthropic");
  auto mine = waiter("openai-waiter");
  m_room.wake_all(); // nothing is free: each pool's first waiter is asked once
  EXPECT_EQ(other->tries, 1);
  EXPECT_EQ(mine->tries, 1);
  m_pool.release(0);
  m_room.wake_all();
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"anthropic-waiter"}); // "anthropic" sorts first
  EXPECT_EQ(m_room.waiting("openai"), 1u);
}

// A retry that fails at once releases its key and wakes the room from inside
// the wake: the next waiter is still served, in order, without recursion.
TEST_F(WaitRoomTest, AWakeFromInsideARetryRunsAfterItNotInsideIt) {
  class FailingAtOnce : public PoolWaiter {
  public:
    FailingAtOnce(pool::KeyPool& pool, Journal& journal, WaitRoom& room, std::string wakes)
        : PoolWaiter("fails", pool, journal), m_pool(pool), m_room(room), m_wakes(std::move(wakes)) {}
    bool retry() override {
      if (!PoolWaiter::retry()) {
        return false;
      }
      m_pool.release(*held); // its attempt failed before any byte: the key is free again
      m_room.wake(m_wakes);
      return true;
    }

  private:
    pool::KeyPool& m_pool;
    WaitRoom& m_room;
    std::string m_wakes;
  };
  take_the_slot();
  auto fails = std::make_shared<FailingAtOnce>(m_pool, m_journal, m_room, "openai");
  fails->place.pool = "openai";
  m_room.enter(fails->place, fails);
  auto next = waiter("next");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"fails", "next"}));
  EXPECT_TRUE(m_room.empty());
}

// The nested wake names another pool: it still runs, once the first ends.
TEST_F(WaitRoomTest, AWakeOfAnotherPoolFromInsideARetryIsNotLost) {
  class WakesOther : public PoolWaiter {
  public:
    WakesOther(pool::KeyPool& pool, Journal& journal, WaitRoom& room)
        : PoolWaiter("wakes", pool, journal), m_pool(pool), m_room(room) {}
    bool retry() override {
      if (!PoolWaiter::retry()) {
        return false;
      }
      m_pool.release(*held);
      m_room.wake("anthropic");
      return true;
    }

  private:
    pool::KeyPool& m_pool;
    WaitRoom& m_room;
  };
  take_the_slot();
  auto wakes = std::make_shared<WakesOther>(m_pool, m_journal, m_room);
  wakes->place.pool = "openai";
  m_room.enter(wakes->place, wakes);
  auto other = waiter("anthropic-waiter", "", "anthropic");
  m_pool.release(0);
  m_room.wake("openai");
  EXPECT_EQ(m_journal.served, (std::vector<std::string>{"wakes", "anthropic-waiter"}));
  EXPECT_TRUE(m_room.empty());
}

// A waiter asked after a reload moved its pool may go on waiting in the new
// pool's queue: the lane it left stays open, and the next waiter is asked.
TEST_F(WaitRoomTest, AWaiterThatMovesToAnotherPoolDoesNotCloseTheLaneItLeft) {
  class Moves : public PoolWaiter {
  public:
    Moves(pool::KeyPool& pool, Journal& journal, WaitRoom& room)
        : PoolWaiter("moves", pool, journal), m_room(room) {}
    bool retry() override {
      ++tries;
      m_room.leave(place);
      place.pool = "renamed";
      m_room.enter(place, self.lock());
      return false;
    }
    std::weak_ptr<Moves> self;

  private:
    WaitRoom& m_room;
  };
  auto moves = std::make_shared<Moves>(m_pool, m_journal, m_room);
  moves->self = moves;
  moves->place.pool = "openai";
  m_room.enter(moves->place, moves);
  auto next = waiter("next");
  m_room.wake("openai"); // the slot is free
  EXPECT_EQ(m_journal.served, std::vector<std::string>{"next"});
  EXPECT_EQ(m_room.waiting("openai"), 0u);
  EXPECT_EQ(m_room.waiting("renamed"), 1u);
  EXPECT_EQ(moves->tries, 1);
}

// What /status shows per pool: how many wait, and since when the first to
// enter (whatever its lane) has, counted from its first entry.
TEST_F(WaitRoomTest, TheQueueCountsItsWaitersAndAgesTheOldestFromItsFirstEntry) {
  take_the_slot();
  auto first = waiter("first", "gpt-4o");
  m_mono.advance(3s);
  auto second = waiter("second");
  m_mono.advance(2s);
  WaitRoom::Queue queue = m_room.queue("openai");
  EXPECT_EQ(queue.waiting, 2u);
  EXPECT_EQ(queue.oldest, 5000ms);
  EXPECT_EQ(m_room.queue("anthropic").waiting, 0u);
  EXPECT_EQ(m_room.queue("anthropic").oldest, 0ms);

  m_pool.release(0);
  m_room.wake("openai");
  ASSERT_EQ(m_journal.served, std::vector<std::string>{"first"});
  EXPECT_EQ(m_room.queue("openai").oldest, 2000ms);

  // Waiting again after an attempt keeps the age of the first entry.
  m_room.leave(second->place);
  m_mono.advance(1s);
  m_room.enter(second->place, second);
  queue = m_room.queue("openai");
  EXPECT_EQ(queue.waiting, 1u);
  EXPECT_EQ(queue.oldest, 3000ms);
}

TEST_F(WaitRoomTest, ShutdownTellsEveryWaiterAndEmptiesTheRoom) {
  auto a = waiter("a");
  auto b = waiter("b", "", "anthropic");
  m_room.close_all();
  EXPECT_EQ(m_journal.shut_down.size(), 2u);
  EXPECT_TRUE(m_room.empty());
  EXPECT_TRUE(m_room.closed());
  m_room.wake("openai"); // nothing left to wake
  EXPECT_EQ(a->tries, 0);
}

} // namespace
} // namespace keyshim::relay
