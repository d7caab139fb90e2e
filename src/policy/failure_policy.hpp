#pragma once
// What one upstream attempt's outcome means: for the request (commit, relay to
// the client, retry the same key, try the next key) and for the key's health.
// Pure: no I/O and no HTTP library (the relay turns what it read into an
// Outcome); time comes in as an argument.
#include "policy/types.hpp"
#include "util/clock.hpp"

#include <chrono>
#include <string>

namespace keyshim::policy {

enum class Action {
  commit,         // 2xx/3xx with a healthy start: send it to the client
  relay,          // a response every key would get (400, 404, 501...): send it as-is
  retry_same_key, // transient: the same key once more (the relay enforces "once")
  next_key,       // this key cannot serve the request now
};

enum class HealthChange {
  success, // clears the failure and rate-limit streaks
  failure, // counts toward the failure streak; `cooldown` > 0 once the streak reaches 3
  cool,    // cooling for `cooldown` (never shortens a longer existing cooldown)
  disable, // disabled until reload
  none,    // untouched
};

// Whose health the change is about. Provider limits and outages are mostly
// per model (OpenAI's rate limits, Anthropic's 529, Gemini's per-model
// quotas); a revoked key or an empty account is the key's for every model.
enum class Scope {
  key,   // 401, 402, quota and billing, invalid key, other 403, connection failures
  model, // 429 without an account-wide quota signal, 5xx and 529, error events, first-byte timeouts
};

struct Verdict {
  Action action = Action::relay;
  HealthChange change = HealthChange::none;
  Scope scope = Scope::key; // a request without a model applies every change to the key
  milliseconds cooldown{0};
  bool rate_limited = false; // the cooldown extends the rate-limit streak (429 doubling)
  // Short, human, key-free: "429 Retry-After", "401", "insufficient_quota",
  // "503", "connect error", "first byte timeout", "error event overloaded_error".
  std::string reason;
};

// What the policy needs to know of the key's past to compute backoffs.
struct KeyHistory {
  int consecutive_failures = 0;    // 5xx/transport failures since the last success
  int consecutive_rate_limits = 0; // 429s without a usable hint since the last success
};

struct Limits {
  milliseconds max_cooldown{std::chrono::hours(24)};
};

// The failure table of docs/behaviour.md §5, row by row.
Verdict classify(const Outcome& outcome, const KeyHistory& history, util::TimePoint now,
                 const Limits& limits);

} // namespace keyshim::policy
