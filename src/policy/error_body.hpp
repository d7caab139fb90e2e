#pragma once
// What a provider's error body says about the key itself (internal header).
#include <string_view>

namespace keyshim::policy::detail {

enum class BillingSignal {
  none,
  insufficient_quota, // OpenAI: the account has no credit left
  billing,            // Anthropic credit balance, billing_error; Gemini billing disabled
};

// Whether the body says the key's account cannot pay. Deliberately ignores the
// phrase "check your plan and billing details": OpenAI and Gemini put it in
// ordinary rate-limit messages too.
BillingSignal billing_signal(std::string_view body);

// Whether a 400 body says the key itself is invalid (Gemini answers a bad or
// expired key with 400 API_KEY_INVALID rather than 401).
bool invalid_key_signal(std::string_view body);

} // namespace keyshim::policy::detail
