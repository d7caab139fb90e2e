#pragma once
// The complete responses the relay gives when it does not stream one: an
// upstream error relayed (keys redacted), a 502 when no upstream answered,
// a 503 when no key is eligible.
#include "policy/failure_policy.hpp"
#include "pool/key_pool.hpp"
#include "relay/exchange.hpp"

#include <string>
#include <vector>

namespace keyshim::relay {

// The upstream's error response as the client will get it: hop-by-hop
// headers removed, every pool key in the body replaced by its fingerprint.
Answer upstream_error_answer(const policy::Outcome& outcome, const pool::KeyPool& pool);

// 502 in the OpenAI error shape naming each key tried and what it got
// ("k0: connect error").
Answer unreachable_answer(const std::vector<std::string>& tried_keys);

// 503 with Retry-After until the earliest cooldown ends (none when every
// key is disabled).
Answer no_key_answer(const pool::Selection& selection);

} // namespace keyshim::relay
