#pragma once
// The live client connections and the requests in flight on them: what the
// server needs at shutdown to close idle connections, wait for the rest, and
// cut them when the drain runs out of time.
//
// The connections form an intrusive list. Each links itself in its
// constructor and unlinks itself in its destructor, so the list can never
// hold a connection that no longer exists, joining costs no allocation, and
// nothing needs pruning. (A list of weak_ptr would need a node per
// connection and either pruning of expired entries or the same unlinking in
// the destructor.) Iterating takes shared ownership first, so a connection
// that closes while others are told to drain stays valid until the end.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace keyshim::server {

class ConnectionRegistry {
public:
  // A connection as the registry sees it. Event-loop thread only.
  class Member {
  public:
    explicit Member(ConnectionRegistry& registry);
    virtual ~Member();
    Member(const Member&) = delete;
    Member& operator=(const Member&) = delete;

    // Shutdown began: close now if idle, else after the current response.
    virtual void drain() = 0;
    // The drain ran out of time: end the current response and close.
    virtual void abort() = 0;
    // Shared ownership of this connection; null once its destruction began.
    virtual std::shared_ptr<Member> hold() = 0;

  private:
    friend class ConnectionRegistry;
    ConnectionRegistry* m_registry; // null once the registry is gone
    Member* m_prev = nullptr;
    Member* m_next = nullptr;
  };

  ConnectionRegistry() = default;
  // Members still alive afterwards (an io_context destroying handlers late)
  // are released: their destructors then leave no list.
  ~ConnectionRegistry();
  ConnectionRegistry(const ConnectionRegistry&) = delete;
  ConnectionRegistry& operator=(const ConnectionRegistry&) = delete;

  // A request was handed to the relay, or its exchange finished. Loop thread.
  void request_started() { ++m_in_flight; }
  void request_finished() { --m_in_flight; }
  // Requests being relayed now. Any thread.
  int in_flight() const { return m_in_flight.load(); }
  // Live connections. Loop thread.
  std::size_t size() const { return m_size; }

  // Tell every live connection that shutdown began. Loop thread.
  void drain_all();
  // Cut every live connection. Loop thread.
  void abort_all();

private:
  void link(Member& member);
  void unlink(Member& member);
  // Shared ownership of every live member, in the order they joined.
  std::vector<std::shared_ptr<Member>> hold_all() const;

  Member* m_first = nullptr;
  Member* m_last = nullptr;
  std::size_t m_size = 0;
  std::atomic<int> m_in_flight{0};
};

} // namespace keyshim::server
