#include "policy/socket_event.hpp"

#include "policy/usage_tally.hpp"
#include "util/json.hpp"

#include <string>

namespace keyshim::policy {
namespace {

// Events are parsed only when their text could be what is looked for: most
// are deltas of a response's output, relayed at token rate.
bool mentions(std::string_view message, std::string_view word) {
  return message.find(word) != std::string_view::npos;
}

std::optional<util::Json> event_object(std::string_view message) {
  std::optional<util::Json> event = util::parse_json(message);
  if (!event || !event->is_object()) {
    return std::nullopt;
  }
  return event;
}

// The event's own status: OpenAI writes `status`, some gateways `status_code`.
int status_of(const util::Json& event) {
  for (std::string_view name : {"status", "status_code"}) {
    if (const util::Json* status = event.find(name); status && status->is_number()) {
      double value = status->as_number();
      if (value >= 400 && value < 600) {
        return static_cast<int>(value);
      }
    }
  }
  return 0;
}

std::vector<Header> headers_of(const util::Json& event) {
  std::vector<Header> headers;
  if (const util::Json* fields = event.find("headers"); fields && fields->is_object()) {
    for (const auto& [name, value] : fields->members()) {
      if (value.is_string()) {
        headers.push_back({name, value.as_string()});
      } else if (value.is_number()) {
        headers.push_back({name, value.dump()});
      }
    }
  }
  return headers;
}

} // namespace

std::optional<Outcome> socket_event_failure(std::string_view message) {
  if (!mentions(message, "error") && !mentions(message, "response.failed")) {
    return std::nullopt;
  }
  std::optional<util::Json> event = event_object(message);
  std::optional<std::string> type = event ? event->string_at("type") : std::nullopt;
  if (!type || (*type != "error" && *type != "response.failed")) {
    return std::nullopt;
  }
  const util::Json* response = *type == "error" ? &*event : event->find("response");
  const util::Json* error = response ? response->find("error") : nullptr;
  util::Json error_object = error ? *error : util::Json::make_object();
  std::string code = error_object.string_at("code").value_or(error_object.string_at("type").value_or(""));
  Outcome outcome;
  outcome.status = *type == "error" ? status_of(*event) : 0;
  if (outcome.status == 0 && (code == "rate_limit_exceeded" || code == "insufficient_quota")) {
    outcome.status = 429; // what the same failure answers over HTTP
  }
  if (outcome.status != 0) {
    outcome.headers = headers_of(*event);
    outcome.body = util::Json::make_object({{"error", error_object}}).dump();
    return outcome;
  }
  // Any other failure: judged as the first event of a 200 stream would be.
  outcome.status = 200;
  outcome.event_stream = true;
  util::Json as_event =
      util::Json::make_object({{"type", util::Json::make_string("error")}, {"error", error_object}});
  outcome.body = "data: " + as_event.dump() + "\n\n";
  return outcome;
}

std::optional<bool> socket_turn_resendable(std::string_view client_message) {
  if (!mentions(client_message, "response.create")) {
    return std::nullopt;
  }
  std::optional<util::Json> message = event_object(client_message);
  if (!message || message->string_at("type") != "response.create") {
    return std::nullopt;
  }
  const util::Json* previous = message->find("previous_response_id");
  return previous == nullptr || previous->is_null();
}

std::optional<Usage> socket_event_usage(std::string_view message) {
  if (!mentions(message, "\"response.") || !detail::has_usage_object(message)) {
    return std::nullopt;
  }
  detail::UsageTally tally;
  tally.take_event(message);
  Usage usage = tally.result();
  if (!usage.input && !usage.output) {
    return std::nullopt;
  }
  return usage;
}

} // namespace keyshim::policy
