#pragma once
// What an attempt's verdict means for the key's health, in the pool's terms:
// policy and pool do not know each other, so the relay translates.
#include "policy/failure_policy.hpp"
#include "pool/key_pool.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace keyshim::relay {

// How an attempt failed, for the key's usage counts; nullopt when the key
// did its job (a success, or an answer every key would get).
std::optional<pool::FailureClass> failure_class(const policy::Outcome& outcome,
                                                const policy::Verdict& verdict);

// The report of an attempt the policy judged: its change, scope, cooldown,
// reason and failure class; the status is 0 for a transport failure.
pool::Report health_report(const policy::Outcome& outcome, const policy::Verdict& verdict);

// The report of an attempt whose response was committed to the client.
pool::Report served_report(int status);

// The log line a verdict's change of health earns, with the key's `label`,
// `model` when the change is the model's, and the streaks after the change:
// `key team cooling 30s for model gpt-4o: 429 Retry-After`. Nothing for a
// success or a neutral answer.
void log_health_change(std::string_view label, const policy::Verdict& verdict, const std::string* model,
                       const pool::Streaks& streaks);

// The log line of a key that has just reached one of its own `limits`:
// `key team at its own limit for 34s: requests 2/2 per minute`.
void log_limit_reached(std::string_view label, const std::vector<pool::LimitUse>& limits,
                       util::TimePoint now);

} // namespace keyshim::relay
