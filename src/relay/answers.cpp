#include "relay/answers.hpp"

#include "relay/header_rules.hpp"
#include "relay/json_error.hpp"
#include "relay/redact.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace keyshim::relay {

using namespace std::chrono;

Answer upstream_error_answer(const policy::Outcome& outcome, const pool::KeyPool& pool) {
  Answer answer;
  answer.status = outcome.status;
  httplib::Headers raw;
  for (const policy::Header& h : outcome.headers) {
    raw.emplace(h.name, h.value);
  }
  answer.headers = client_response_headers(raw);
  answer.body = redact_keys(outcome.body, pool);
  return answer;
}

Answer unreachable_answer(const std::vector<std::string>& tried_keys) {
  std::string tried;
  for (const std::string& t : tried_keys) {
    tried += (tried.empty() ? "" : "; ") + t;
  }
  Answer answer;
  answer.status = 502;
  answer.headers.emplace("Content-Type", "application/json");
  answer.body = json_error_body(fmt::format("keyshim: no upstream response ({})", tried),
                                "keyshim_upstream_unreachable", "upstream_unreachable");
  return answer;
}

Answer no_key_answer(const pool::Selection& selection) {
  Answer answer;
  answer.status = 503;
  answer.headers.emplace("Content-Type", "application/json");
  std::string message;
  if (selection.earliest_available) {
    auto wait = duration_cast<milliseconds>(*selection.earliest_available - system_clock::now());
    auto seconds_left =
        std::max<long long>(1, static_cast<long long>(std::ceil(static_cast<double>(wait.count()) / 1000.0)));
    answer.headers.emplace("Retry-After", std::to_string(seconds_left));
    message = fmt::format("keyshim: every key is cooling or disabled; the next one is available in {} "
                          "(see `keyshim status`)",
                          util::format_duration(milliseconds(seconds_left * 1000)));
  } else {
    message = "keyshim: every key is disabled (revoked or out of credit); fix the pool file and run "
              "`keyshim reload` (see `keyshim status`)";
  }
  answer.body = json_error_body(message, "keyshim_no_key_available", "no_key_available");
  return answer;
}

} // namespace keyshim::relay
