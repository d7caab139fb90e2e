#pragma once
// The client-facing half of forwarding: hands the request to an upstream
// thread, waits for the commit point while watching the client and the
// first-byte deadline, then answers or streams. One Relay serves all requests.
#include "relay/pool_state.hpp"
#include "relay/upstream_clients.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

namespace keyshim::relay {

class Relay {
public:
  explicit Relay(std::chrono::milliseconds tick = std::chrono::milliseconds(50));

  // Forward `req` with a key from `state` and fill `res` (status, headers, and
  // a body or a streaming provider). `client_gone` reports a hung-up client.
  // Never throws.
  void handle(std::shared_ptr<const PoolState> state, const httplib::Request& req, httplib::Response& res,
              std::function<bool()> client_gone);

  // End every in-flight relay now (the drain timeout ran out).
  void abort_all() { m_aborting = true; }
  // Requests whose response has not finished yet, streams included.
  int in_flight() const { return m_in_flight; }
  UpstreamClients& clients() { return m_clients; }

private:
  void forward(std::shared_ptr<const PoolState> state, const httplib::Request& req, httplib::Response& res,
               const std::function<bool()>& client_gone);

  std::chrono::milliseconds m_tick;
  UpstreamClients m_clients;
  std::atomic<bool> m_aborting{false};
  std::atomic<int> m_in_flight{0};
};

} // namespace keyshim::relay
