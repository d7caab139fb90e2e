#pragma once
// What the relay serves from: the loaded pool file and the keys of each of
// its pools, or the reason there are none. Immutable once published; a
// reload publishes a new one.
#include "config/config.hpp"
#include "pool/key_pool.hpp"
#include "relay/redact.hpp"
#include "relay/tls_contexts.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {

// One pool of the file, as requests reach it.
struct ServedPool {
  const config::PoolConfig* config = nullptr; // points into PoolState::config
  std::shared_ptr<pool::KeyPool> keys;
  std::vector<std::string> query_auth_params; // every `query:NAME` of its keys
  std::vector<std::string> origins;           // per key: UpstreamPool::origin_of, made once per load
};

// Where one request goes: a pool, and the target to forward there.
struct Route {
  std::size_t pool = 0; // index into PoolState::pools
  std::string target;   // the client's target without the pool's /NAME prefix
};

struct PoolState {
  std::shared_ptr<const config::Config> config; // null when the file could not be used
  std::vector<ServedPool> pools;                // like config->pools
  std::string problem;                          // why not, with the fix, for 503 answers
  std::shared_ptr<const Redactor> redactor;     // every key of every pool, for redaction
  std::optional<std::size_t> default_pool;      // index of the pool at /, if the file has one
  std::shared_ptr<const TlsContexts> tls;       // every TLS context the https keys need

  // The pool for a request target: /NAME and /NAME/... go to pool NAME
  // (forwarded as / and /...), anything else to the default pool; nullopt
  // when the file has no default pool and no pool owns the prefix.
  std::optional<Route> route(std::string_view target) const;
  // Whether route(target) finds a pool, without building the route.
  bool serves(std::string_view target) const {
    return default_pool.has_value() || named_pool(target).has_value();
  }
  // The named pool `target`'s first segment names, and the target after that segment.
  struct Named {
    std::size_t pool;
    std::string_view rest;
  };
  std::optional<Named> named_pool(std::string_view target) const;

  // A state serving `pools` (one KeyPool per config->pools entry) under
  // `config`, its TLS contexts built now: on the thread that loads the file,
  // so that no request and no event-loop turn pays for the trust store.
  static PoolState serving(std::shared_ptr<const config::Config> config,
                           std::vector<std::shared_ptr<pool::KeyPool>> pools);
  // A state that answers every request 503 with `problem`.
  static PoolState unusable(std::string problem);
};

// Where the newest published state is read: a request that waited for a key
// is served from the state current when it is woken, not the one it came in
// under (a reload may have changed its pool's keys or limits).
class StateSource {
public:
  virtual ~StateSource() = default;
  virtual std::shared_ptr<const PoolState> current() const = 0;
};

// Where key_cmd commands run for new tokens, off the event loop (the
// server's refresher). Thread-safe.
class TokenRefresh {
public:
  virtual ~TokenRefresh() = default;
  // A key's token was refused: run what is due now, not at the next
  // scheduled time.
  virtual void run_due() = 0;
};

} // namespace keyshim::relay
