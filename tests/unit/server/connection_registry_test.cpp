// The registry the server drains and aborts connections through: it knows
// exactly the connections that exist, and survives connections closing
// while it walks them.
#include "server/connection_registry.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace keyshim::server {
namespace {

class FakeConnection : public ConnectionRegistry::Member,
                       public std::enable_shared_from_this<FakeConnection> {
public:
  FakeConnection(ConnectionRegistry& registry, std::string name, std::vector<std::string>& told)
      : Member(registry), m_name(std::move(name)), m_told(told) {}

  void drain() override {
    m_told.push_back("drain " + m_name);
    if (on_drain) {
      on_drain();
    }
  }
  void abort() override { m_told.push_back("abort " + m_name); }
  std::shared_ptr<Member> hold() override { return weak_from_this().lock(); }

  std::function<void()> on_drain;

private:
  std::string m_name;
  std::vector<std::string>& m_told;
};

TEST(ConnectionRegistry, DrainAndAbortReachEveryLiveConnectionInArrivalOrder) {
  ConnectionRegistry registry;
  std::vector<std::string> told;
  auto a = std::make_shared<FakeConnection>(registry, "a", told);
  auto b = std::make_shared<FakeConnection>(registry, "b", told);
  auto c = std::make_shared<FakeConnection>(registry, "c", told);
  EXPECT_EQ(registry.size(), 3u);

  registry.drain_all();
  registry.abort_all();

  EXPECT_EQ(told,
            (std::vector<std::string>{"drain a", "drain b", "drain c", "abort a", "abort b", "abort c"}));
}

TEST(ConnectionRegistry, ADestroyedConnectionLeavesTheRegistry) {
  ConnectionRegistry registry;
  std::vector<std::string> told;
  auto a = std::make_shared<FakeConnection>(registry, "a", told);
  auto b = std::make_shared<FakeConnection>(registry, "b", told);
  auto c = std::make_shared<FakeConnection>(registry, "c", told);

  b.reset(); // the middle of the list
  EXPECT_EQ(registry.size(), 2u);
  c.reset(); // the end
  a.reset(); // the start, now the only one
  EXPECT_EQ(registry.size(), 0u);

  registry.drain_all();
  EXPECT_TRUE(told.empty());
  auto d = std::make_shared<FakeConnection>(registry, "d", told);
  registry.drain_all();
  EXPECT_EQ(told, std::vector<std::string>{"drain d"});
}

TEST(ConnectionRegistry, AConnectionClosingAnotherWhileDrainingDoesNotBreakTheWalk) {
  ConnectionRegistry registry;
  std::vector<std::string> told;
  auto a = std::make_shared<FakeConnection>(registry, "a", told);
  auto b = std::make_shared<FakeConnection>(registry, "b", told);
  auto c = std::make_shared<FakeConnection>(registry, "c", told);
  // Draining a drops the last outside owner of a, b and c; the walk holds
  // them until it is over, then they leave.
  a->on_drain = [&] {
    b.reset();
    c.reset();
  };
  std::weak_ptr<FakeConnection> watch_b = b;

  registry.drain_all();

  EXPECT_EQ(told, (std::vector<std::string>{"drain a", "drain b", "drain c"}));
  EXPECT_TRUE(watch_b.expired());
  EXPECT_EQ(registry.size(), 1u);
}

TEST(ConnectionRegistry, ConnectionsOutlivingTheRegistryLeaveNothingBehind) {
  std::vector<std::string> told;
  std::shared_ptr<FakeConnection> late;
  {
    ConnectionRegistry registry;
    late = std::make_shared<FakeConnection>(registry, "late", told);
  }
  late.reset(); // must not touch the destroyed registry (ASan would say so)
  EXPECT_TRUE(told.empty());
}

TEST(ConnectionRegistry, CountsRequestsInFlight) {
  ConnectionRegistry registry;
  EXPECT_EQ(registry.in_flight(), 0);
  registry.request_started();
  registry.request_started();
  registry.request_finished();
  EXPECT_EQ(registry.in_flight(), 1);
}

} // namespace
} // namespace keyshim::server
