#include "policy/error_body.hpp"

#include "policy/text.hpp"
#include "util/json.hpp"

#include <initializer_list>

namespace keyshim::policy::detail {
namespace {

bool contains_any(std::string_view lower, std::initializer_list<std::string_view> needles) {
  for (std::string_view needle : needles) {
    if (contains(lower, needle)) {
      return true;
    }
  }
  return false;
}

// OpenAI: {"error": {"type": "insufficient_quota", "code": "insufficient_quota", ...}}.
bool structured_insufficient_quota(std::string_view body) {
  std::optional<util::Json> json = util::parse_json(body);
  const util::Json* error = json ? json->find("error") : nullptr;
  if (error == nullptr) {
    return false;
  }
  return error->string_at("code") == "insufficient_quota" || error->string_at("type") == "insufficient_quota";
}

} // namespace

BillingSignal billing_signal(std::string_view body) {
  if (structured_insufficient_quota(body)) {
    return BillingSignal::insufficient_quota;
  }
  std::string lower = to_lower(body);
  // A truncated or non-JSON body still names the code.
  if (contains(lower, "insufficient_quota")) {
    return BillingSignal::insufficient_quota;
  }
  if (contains_any(lower, {
                              "billing_error",             // Anthropic error type (402)
                              "credit balance is too low", // Anthropic (400)
                              "billing_disabled",          // Gemini ErrorInfo reason (403)
                              "requires billing",          // Gemini "...requires billing to be enabled"
                              "billing to be enabled",
                              "enable billing", // Gemini free tier unavailable (400)
                              "billing is not enabled", "billing has been disabled",
                              "spending cap", // Gemini project spend cap (429)
                          })) {
    return BillingSignal::billing;
  }
  return BillingSignal::none;
}

bool invalid_key_signal(std::string_view body) {
  std::string lower = to_lower(body);
  return contains_any(lower, {"api_key_invalid", "invalid_api_key", "api key not valid", "api key expired"});
}

} // namespace keyshim::policy::detail
