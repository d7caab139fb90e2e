#pragma once
// The two request fields `keyshim replay` sends to its own instance
// (docs/behaviour.md §4.2): `keyshim-replay: ID` marks a replay of capture
// ID, `keyshim-key: LABEL` names the one key of the pool that serves it.
// They reach the relay only from a client that passed the client_token
// check, and header_rules never sends them upstream.
#include "config/config.hpp"
#include "pool/key_pool.hpp"
#include "relay/answers.hpp"
#include "relay/beast.hpp"

#include <cstdint>
#include <optional>

namespace keyshim::relay {

struct ReplayRequest {
  std::optional<std::uint64_t> replay_of; // keyshim-replay: the capture replayed
  std::optional<std::size_t> pinned;      // keyshim-key: the key's index in the pool
  std::optional<Answer> refusal;          // a 400 when a field is malformed or names no key
};

// Reads both fields of `request` for the pool `keys` (configured as `pool`).
// A field given twice, an ID that is not a positive decimal integer or a
// label the pool does not have is a 400 in the pool's error shape.
ReplayRequest read_replay_request(const RequestHead& request, const pool::KeyPool& keys,
                                  const config::PoolConfig& pool);

} // namespace keyshim::relay
