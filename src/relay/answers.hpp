#pragma once
// The complete responses the relay gives when it does not stream one: an
// upstream error relayed (keys redacted), a 502 when no upstream answered,
// a 503 when no key is eligible or no pool file is usable.
#include "policy/failure_policy.hpp"
#include "pool/key_pool.hpp"

#include <string>
#include <utility>
#include <vector>

namespace keyshim::relay {

class Redactor;

struct Answer {
  int status = 502;
  std::string reason; // the status line's phrase; "" = the standard one
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// The upstream's error response as the client will get it: hop-by-hop and
// framing fields removed, every pool key in the fields and body replaced by
// its fingerprint.
Answer upstream_error_answer(const policy::Outcome& outcome, std::string_view reason, std::string_view body,
                             const Redactor& redact);

// A JSON answer in the OpenAI error shape.
Answer json_error_answer(int status, std::string_view message, std::string_view type, std::string_view code);

// A JSON answer in the error shape of the API a pool's `auth` speaks, so
// the pool's clients print its message: Anthropic's for x-api-key, Google's
// for x-goog-api-key and query:NAME, else OpenAI's (`type` and `code` are
// used there only).
Answer api_error_answer(const config::Auth& auth, int status, std::string_view message, std::string_view type,
                        std::string_view code);

// 404 for a request naming a model no key of `pool` serves (models,
// exclude_models), in the pool's error shape, naming the model and the pool.
Answer unserved_model_answer(std::string_view model, const config::PoolConfig& pool);

// 502 naming each key tried and what it got ("k0: connect error").
Answer unreachable_answer(const std::vector<std::string>& tried_keys);

// 503 with Retry-After until the earliest cooldown (or window of a key's own
// limit) ends, counted from the wall-clock `now` (1 s when a key is busy at
// its max_concurrent, none when every key is disabled). `waited`: how long the request waited for a key
// (max_wait), shown when non-zero.
Answer no_key_answer(const pool::Selection& selection, util::TimePoint now,
                     std::chrono::milliseconds waited = {});

// 404 for `path`, which no pool of `config` serves, naming the routes that exist.
Answer no_pool_answer(std::string_view path, const config::Config& config);

// The answer as bytes on the wire, with its Content-Length; without the body
// for a HEAD request; with `Connection: close` when the connection ends.
std::string serialize(const Answer& answer, bool head_request, bool close);

} // namespace keyshim::relay
