// docs/behaviour.md §5 "The failure table", row by row. Each branch below is
// one row of that table (billing is tested before 429 and 403, since it
// outranks them); change the table when changing a branch.
#include "policy/failure_policy.hpp"

#include "policy/error_body.hpp"
#include "policy/retry_hints.hpp"
#include "policy/sse_probe.hpp"

#include <algorithm>

namespace keyshim::policy {
namespace {

using namespace std::chrono;

// Consecutive failures before a key cools, and how that cooling grows.
constexpr int k_failure_streak = 3;
constexpr milliseconds k_failure_cooldown = seconds(30);
constexpr milliseconds k_failure_cooldown_cap = minutes(10);
// A 429 without any hint.
constexpr milliseconds k_rate_limit_cooldown = seconds(60);
constexpr milliseconds k_rate_limit_cooldown_cap = hours(1);
constexpr milliseconds k_forbidden_cooldown = minutes(10);
constexpr milliseconds k_error_event_cooldown = seconds(30);
// A hint of "now" or the past still means "not this very instant".
constexpr milliseconds k_hint_floor = seconds(1);

milliseconds cap(milliseconds wait, const Limits& limits) {
  return std::min(wait, limits.max_cooldown);
}

// base, 2*base, 4*base... for step 0, 1, 2..., never above `ceiling`.
milliseconds doubling(milliseconds base, int step, milliseconds ceiling) {
  milliseconds wait = base;
  for (int i = 0; i < step && wait < ceiling; ++i) {
    wait *= 2;
  }
  return std::min(wait, ceiling);
}

// Cooling after this failure: none until the streak reaches 3, then 30 s
// doubling per further failure (30 s, 60 s, 120 s...) up to 10 minutes.
milliseconds failure_streak_cooldown(const KeyHistory& history, const Limits& limits) {
  int streak = history.consecutive_failures + 1;
  if (streak < k_failure_streak) {
    return milliseconds(0);
  }
  return cap(doubling(k_failure_cooldown, streak - k_failure_streak, k_failure_cooldown_cap), limits);
}

Verdict make(Action action, HealthChange change, milliseconds cooldown, std::string reason) {
  Verdict verdict;
  verdict.action = action;
  verdict.change = change;
  verdict.cooldown = cooldown;
  verdict.reason = std::move(reason);
  return verdict;
}

Verdict scoped(Verdict verdict) {
  verdict.scope = Scope::model;
  return verdict;
}

Verdict transport_verdict(const Outcome& outcome, const KeyHistory& history, const Limits& limits) {
  milliseconds cooldown = failure_streak_cooldown(history, limits);
  switch (outcome.transport) {
  case TransportFailure::connect:
    return make(Action::retry_same_key, HealthChange::failure, cooldown, "connect error");
  case TransportFailure::tls:
    return make(Action::retry_same_key, HealthChange::failure, cooldown, "tls error");
  case TransportFailure::closed_before_response:
    return make(Action::retry_same_key, HealthChange::failure, cooldown, "closed before response");
  case TransportFailure::first_byte_timeout:
  case TransportFailure::none:
    break;
  }
  // Never the same key again: a silent upstream may still be generating, and
  // a replay there multiplies the wait. A model that thinks too long (or is
  // stuck) says nothing about the key's other models.
  return scoped(make(Action::next_key, HealthChange::failure, cooldown, "first byte timeout"));
}

// A 2xx/3xx commits, unless it is an event stream that opens with an error
// event: then nothing has reached the client yet and another key may do.
Verdict success_verdict(const Outcome& outcome, const Limits& limits) {
  if (outcome.event_stream && outcome.status < 300) {
    std::string_view body = outcome.body;
    std::optional<std::size_t> end = first_event_end(body);
    std::optional<std::string> error = first_event_error(end ? body.substr(0, *end) : body);
    if (error) {
      return scoped(make(Action::next_key, HealthChange::cool, cap(k_error_event_cooldown, limits),
                         "error event " + *error));
    }
  }
  return make(Action::commit, HealthChange::success, milliseconds(0), std::to_string(outcome.status));
}

Verdict rate_limit_verdict(const Outcome& outcome, const KeyHistory& history, util::TimePoint now,
                           const Limits& limits) {
  if (std::optional<RetryHint> hint = find_retry_hint(outcome.headers, outcome.body, now)) {
    milliseconds wait = cap(std::max(hint->wait, k_hint_floor), limits);
    std::string source = hint->source == "body" ? "body hint" : hint->source;
    return scoped(make(Action::next_key, HealthChange::cool, wait, "429 " + source));
  }
  // No hint: back off harder on each hint-less 429 in a row.
  milliseconds wait = cap(
      doubling(k_rate_limit_cooldown, history.consecutive_rate_limits, k_rate_limit_cooldown_cap), limits);
  Verdict verdict = scoped(make(Action::next_key, HealthChange::cool, wait, "429"));
  verdict.rate_limited = true;
  return verdict;
}

bool is_transient_5xx(int status) {
  return status == 500 || status == 502 || status == 503 || status == 504 || status == 529;
}

} // namespace

Verdict classify(const Outcome& outcome, const KeyHistory& history, util::TimePoint now,
                 const Limits& limits) {
  if (outcome.transport != TransportFailure::none) {
    return transport_verdict(outcome, history, limits);
  }
  const int status = outcome.status;
  if (status >= 200 && status < 400) {
    return success_verdict(outcome, limits);
  }
  if (is_transient_5xx(status)) {
    return scoped(make(Action::retry_same_key, HealthChange::failure,
                       failure_streak_cooldown(history, limits), std::to_string(status)));
  }
  // Billing beats everything else a 4xx can mean: 402 always, and 429/403
  // (also 400: Anthropic's "credit balance is too low") when the body says so.
  // The key stays useless until the user pays, so it is disabled, not cooled.
  if (status == 400 || status == 402 || status == 403 || status == 429) {
    detail::BillingSignal billing = detail::billing_signal(outcome.body);
    if (billing == detail::BillingSignal::insufficient_quota) {
      return make(Action::next_key, HealthChange::disable, milliseconds(0), "insufficient_quota");
    }
    if (billing == detail::BillingSignal::billing || status == 402) {
      return make(Action::next_key, HealthChange::disable, milliseconds(0),
                  "billing (" + std::to_string(status) + ")");
    }
  }
  if (status == 401) {
    return make(Action::next_key, HealthChange::disable, milliseconds(0), "401 unauthorized");
  }
  // Every key would get the same 400 for a bad request, but not for a bad
  // key: Gemini reports an invalid or expired key as 400 API_KEY_INVALID.
  if (status == 400 && detail::invalid_key_signal(outcome.body)) {
    return make(Action::next_key, HealthChange::disable, milliseconds(0), "invalid api key (400)");
  }
  if (status == 429) {
    return rate_limit_verdict(outcome, history, now, limits);
  }
  if (status == 403) {
    return make(Action::next_key, HealthChange::cool, cap(k_forbidden_cooldown, limits), "403 forbidden");
  }
  // 400, 404, 413, 422..., 501, 505...: the request itself is the problem, so
  // every key would get the same answer. The client sees it as-is.
  return make(Action::relay, HealthChange::none, milliseconds(0), std::to_string(status));
}

} // namespace keyshim::policy
