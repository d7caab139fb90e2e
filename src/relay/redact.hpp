#pragma once
// Upstreams sometimes echo the key they were given ("Incorrect API key
// provided: sk-abc..."). Every exact occurrence of a pool key is replaced by
// its fingerprint before the text reaches a log or the client.
#include "pool/key_pool.hpp"

#include <string>

namespace keyshim::relay {

// `text` with each pool key replaced by its fingerprint.
std::string redact_keys(std::string text, const pool::KeyPool& pool);

} // namespace keyshim::relay
