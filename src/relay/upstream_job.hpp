#pragma once
// The upstream side of one relayed request: choose keys, run attempts,
// classify each outcome, and either commit a response to the client or
// decide the answer. Runs on its own thread (see exchange.hpp).
#include "policy/failure_policy.hpp"
#include "relay/exchange.hpp"
#include "relay/pool_state.hpp"
#include "relay/upstream_clients.hpp"

#include <httplib.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::relay {

// The client's request as it will be forwarded (credentials and hop-by-hop
// headers already removed).
struct ForwardedRequest {
  std::string method;
  std::string target; // raw path and query, as the client sent it
  httplib::Headers headers;
  std::string body;
};

class UpstreamJob {
public:
  UpstreamJob(std::shared_ptr<const PoolState> state, ForwardedRequest request, Exchange& exchange,
              UpstreamClients& clients);

  // Run attempts until a commit, an answer, or cancellation.
  void run();

private:
  struct AttemptResult {
    enum class Kind { committed, cancelled, classified } kind = Kind::classified;
    policy::Outcome outcome;
    policy::Verdict verdict;
  };

  AttemptResult attempt(std::size_t index);
  httplib::Request upstream_request(const config::KeyConfig& key) const;
  void apply_health(std::size_t index, const policy::Outcome& outcome, const policy::Verdict& verdict);

  std::shared_ptr<const PoolState> m_state;
  const config::Config& m_config;
  pool::KeyPool& m_pool;
  ForwardedRequest m_request;
  Exchange& m_exchange;
  UpstreamClients& m_clients;
  // "label: what happened" for each attempt, for the 502 message.
  std::vector<std::string> m_tried;
};

// "connect error", "tls error", "closed before response", "first byte timeout".
const char* describe(policy::TransportFailure failure);

} // namespace keyshim::relay
