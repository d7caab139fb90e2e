#pragma once
// What the relay serves from: the loaded pool file and its keys, or the reason
// there are none. Immutable once published; a reload publishes a new one.
#include "config/config.hpp"
#include "pool/key_pool.hpp"
#include "relay/redact.hpp"

#include <memory>
#include <string>
#include <vector>

namespace keyshim::relay {

struct PoolState {
  std::shared_ptr<const config::Config> config; // null when the file could not be used
  std::shared_ptr<pool::KeyPool> pool;          // null when the file could not be used
  std::string problem;                          // why not, with the fix, for 503 answers
  std::shared_ptr<const Redactor> redactor;     // the pool's keys, for redaction
  std::vector<std::string> query_auth_params;   // every `query:NAME` of the pool's keys

  // A state serving `pool` under `config`.
  static PoolState serving(std::shared_ptr<const config::Config> config, std::shared_ptr<pool::KeyPool> pool);
  // A state that answers every request 503 with `problem`.
  static PoolState unusable(std::string problem);
};

} // namespace keyshim::relay
