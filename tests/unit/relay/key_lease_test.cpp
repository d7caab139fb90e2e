// A held key goes back exactly once, however the request ends, and the
// pool's waiters hear of it at once.
#include "relay/key_lease.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace keyshim::relay {
namespace {

config::KeyConfig one_slot_key() {
  config::KeyConfig key;
  key.label = "only";
  key.secret = util::Secret("sk-lease-0123456789abcdef");
  key.max_concurrent = 1;
  return key;
}

// Takes the key when offered it, as a waiting exchange does.
class TakingWaiter : public Waiter {
public:
  explicit TakingWaiter(pool::KeyPool& pool) : m_pool(pool) {}
  bool retry() override {
    ++tries;
    got = m_pool.acquire({}).index.has_value();
    return got;
  }
  void shutting_down() override {}
  int tries = 0;
  bool got = false;

private:
  pool::KeyPool& m_pool;
};

class KeyLeaseTest : public ::testing::Test {
protected:
  KeyLease lease() {
    std::optional<std::size_t> index = m_pool.acquire({}).index;
    EXPECT_TRUE(index);
    return KeyLease(m_pool, index.value_or(0), nullptr, m_room, m_name);
  }
  int in_flight() const { return m_pool.health(0).in_flight; }

  test::FakeClock m_clock;
  pool::KeyPool m_pool{{one_slot_key()}, config::Strategy::ordered, m_clock};
  WaitRoom m_room;
  std::string m_name = "openai";
};

TEST_F(KeyLeaseTest, ReleasingGivesTheSlotToTheFirstWaiter) {
  KeyLease held = lease();
  EXPECT_TRUE(held.held());
  EXPECT_EQ(in_flight(), 1);
  auto waiter = std::make_shared<TakingWaiter>(m_pool);
  WaitRoom::Place place{m_name, "", 0};
  m_room.enter(place, waiter);
  held.release();
  EXPECT_FALSE(held.held());
  EXPECT_TRUE(waiter->got);
  EXPECT_EQ(waiter->tries, 1);
  EXPECT_TRUE(m_room.empty());
}

TEST_F(KeyLeaseTest, ALeaseGoesBackOnceHoweverOftenItIsReleased) {
  KeyLease held = lease();
  held.release();
  held.release();
  EXPECT_EQ(in_flight(), 0);
  KeyLease other = lease(); // the slot is free again, and counted once
  EXPECT_EQ(in_flight(), 1);
}

TEST_F(KeyLeaseTest, DestroyingALeaseReleasesIt) {
  {
    KeyLease held = lease();
    EXPECT_EQ(in_flight(), 1);
  }
  EXPECT_EQ(in_flight(), 0);
}

TEST_F(KeyLeaseTest, AMovedLeaseIsReleasedByItsNewOwnerOnly) {
  KeyLease target;
  EXPECT_FALSE(target.held());
  {
    KeyLease held = lease();
    target = std::move(held);
  }
  EXPECT_EQ(in_flight(), 1) << "the moved-from lease released nothing";
  EXPECT_TRUE(target.held());
  EXPECT_EQ(target.index(), 0u);
  target.release();
  EXPECT_EQ(in_flight(), 0);
}

} // namespace
} // namespace keyshim::relay
