#pragma once
// Shared helpers for the policy tests: provider bodies from tests/data/providers
// and outcome builders.
#include "policy/failure_policy.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::test {

// The body of tests/data/providers/NAME (e.g. "openai_429_rate_limit.json").
inline std::string provider_body(const std::string& name) {
  std::ifstream in(std::string(KEYSHIM_TEST_DATA_DIR) + "/providers/" + name, std::ios::binary);
  if (!in) {
    throw std::runtime_error("missing test data: providers/" + name);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline policy::Outcome response(int status, std::vector<policy::Header> headers = {}, std::string body = {}) {
  policy::Outcome outcome;
  outcome.status = status;
  outcome.headers = std::move(headers);
  outcome.body = std::move(body);
  return outcome;
}

inline policy::Outcome transport(policy::TransportFailure failure) {
  policy::Outcome outcome;
  outcome.transport = failure;
  return outcome;
}

inline policy::Outcome event_stream(std::string first_bytes) {
  policy::Outcome outcome = response(200, {{"Content-Type", "text/event-stream"}}, std::move(first_bytes));
  outcome.event_stream = true;
  return outcome;
}

} // namespace keyshim::test
