#pragma once
// One event of OpenAI's Responses WebSocket (a JSON text message per event,
// as Codex receives them), read for what it says about the key that opened
// the socket: a failure, as the HTTP outcome it stands for, or the usage a
// finished response reports. keyshim relays every event unchanged; this only
// reads a copy.
#include "policy/types.hpp"

#include <optional>
#include <string_view>

namespace keyshim::policy {

// An `error` event with a status (`status` or `status_code`, as OpenAI sends
// a rate limit: {"type":"error","status":429,"error":{...},"headers":
// {"retry-after":"1"}}) stands for that status, its headers and the event as
// the body; an `error` event without one, or `response.failed`, for a 200
// event stream whose first event is that error. nullopt for any other event
// (and for text that is not a JSON object).
std::optional<Outcome> socket_event_failure(std::string_view message);

// A message the client sent on a Responses WebSocket: nullopt unless it is a
// `response.create` (a turn); else whether the turn can be re-sent on
// another connection: only when it names no earlier response
// (`previous_response_id`), which only the first connection's key knows.
std::optional<bool> socket_turn_resendable(std::string_view client_message);

// The usage of `response.completed` (or `response.incomplete` or
// `response.failed`); nullopt for other events and when it has none.
std::optional<Usage> socket_event_usage(std::string_view message);

} // namespace keyshim::policy
