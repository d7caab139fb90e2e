#pragma once
// What the relay serves from: the loaded pool file and its keys, or the reason
// there are none. Immutable once published; a reload publishes a new one.
#include "config/config.hpp"
#include "pool/key_pool.hpp"

#include <memory>
#include <string>

namespace keyshim::relay {

struct PoolState {
  std::shared_ptr<const config::Config> config; // null when the file could not be used
  std::shared_ptr<pool::KeyPool> pool;          // null when the file could not be used
  std::string problem;                          // why not, with the fix, for 503 answers
};

} // namespace keyshim::relay
