#include "relay/answers.hpp"

#include "relay/header_rules.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"
#include "util/duration.hpp"
#include "util/http_text.hpp"
#include "util/json_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace keyshim::relay {

using namespace std::chrono;

Answer upstream_error_answer(const policy::Outcome& outcome, std::string_view reason, std::string_view body,
                             const Redactor& redact) {
  Answer answer;
  answer.status = outcome.status;
  answer.reason = std::string(reason);
  auto named_by_connection = [&](std::string_view name) {
    return std::any_of(outcome.headers.begin(), outcome.headers.end(), [&](const policy::Header& h) {
      return util::iequals(h.name, "connection") && lists_token(h.value, name);
    });
  };
  for (const policy::Header& field : outcome.headers) {
    if (is_hop_by_hop(field.name) || util::iequals(field.name, "content-length") ||
        named_by_connection(field.name)) {
      continue;
    }
    answer.headers.emplace_back(field.name, redact.apply(field.value));
  }
  answer.body = redact.apply(body);
  return answer;
}

Answer json_error_answer(int status, std::string_view message, std::string_view type, std::string_view code) {
  Answer answer;
  answer.status = status;
  answer.headers.emplace_back("Content-Type", "application/json");
  answer.body = util::json_error_body(message, type, code);
  return answer;
}

Answer api_error_answer(const config::Auth& auth, int status, std::string_view message, std::string_view type,
                        std::string_view code) {
  util::ErrorShape shape = util::ErrorShape::openai;
  if (auth.style == config::AuthStyle::x_api_key) {
    shape = util::ErrorShape::anthropic;
  } else if (auth.style == config::AuthStyle::x_goog_api_key || auth.style == config::AuthStyle::query) {
    shape = util::ErrorShape::google;
  }
  Answer answer;
  answer.status = status;
  answer.headers.emplace_back("Content-Type", "application/json");
  answer.body = util::api_error_body(shape, status, message, type, code);
  return answer;
}

Answer unserved_model_answer(std::string_view model, const config::PoolConfig& pool) {
  return api_error_answer(pool.upstream.auth, 404,
                          fmt::format("keyshim: model \"{}\" is not served by any key of pool \"{}\" (see "
                                      "models and exclude_models in the pool file, or `keyshim check`)",
                                      model, pool.name),
                          "keyshim_model_not_served", "model_not_found");
}

Answer unreachable_answer(const std::vector<std::string>& tried_keys) {
  std::string tried;
  for (const std::string& t : tried_keys) {
    tried += (tried.empty() ? "" : "; ") + t;
  }
  return json_error_answer(502, fmt::format("keyshim: no upstream response ({})", tried),
                           "keyshim_upstream_unreachable", "upstream_unreachable");
}

Answer no_pool_answer(std::string_view path, const config::Config& config) {
  std::string routes;
  for (const config::PoolConfig& pool : config.pools) {
    routes += (routes.empty() ? "" : ", ") + pool.route() + "/";
  }
  return json_error_answer(
      404, fmt::format("keyshim: no pool serves {}; this keyshim's pools are at {}", path, routes),
      "keyshim_no_pool", "unknown_pool");
}

Answer no_key_answer(const pool::Selection& selection, util::TimePoint now, milliseconds waited) {
  std::string after = waited.count() > 0 ? fmt::format(" (waited {})", util::format_duration(waited)) : "";
  if (selection.busy) {
    // A slot frees when a request ends, which nobody can predict: 1 s is
    // the shortest hint Retry-After can give.
    Answer answer = json_error_answer(
        503, fmt::format("keyshim: every key is busy at its max_concurrent limit or cooling{}", after),
        "keyshim_no_key_available", "no_key_available");
    answer.headers.emplace_back("Retry-After", "1");
    return answer;
  }
  if (!selection.earliest_available) {
    return json_error_answer(
        503,
        "keyshim: every key is disabled (revoked or out of credit); fix the pool file and "
        "run `keyshim reload` (see `keyshim status`)",
        "keyshim_no_key_available", "no_key_available");
  }
  auto wait = duration_cast<milliseconds>(*selection.earliest_available - now);
  auto seconds_left =
      std::max<long long>(1, static_cast<long long>(std::ceil(static_cast<double>(wait.count()) / 1000.0)));
  Answer answer = json_error_answer(
      503,
      fmt::format("keyshim: every key is {}{}; the next one is available in {} (see `keyshim status`)",
                  selection.over_limits ? "at one of its own limits, cooling or disabled"
                                        : "cooling or disabled",
                  after, util::format_duration(milliseconds(seconds_left * 1000))),
      "keyshim_no_key_available", "no_key_available");
  answer.headers.emplace_back("Retry-After", std::to_string(seconds_left));
  return answer;
}

std::string serialize(const Answer& answer, bool head_request, bool close) {
  return util::complete_response(answer.status, answer.reason, answer.headers, answer.body, head_request,
                                 close);
}

} // namespace keyshim::relay
