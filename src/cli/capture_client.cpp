#include "cli/capture_client.hpp"

#include "server/local_client.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

namespace keyshim::cli {
namespace {

CaptureAnswer failure(CaptureAnswer answer, std::string message) {
  answer.error = std::move(message);
  return answer;
}

std::string error_message(const util::Json& json) {
  const util::Json* error = json.find("error");
  if (error && error->is_string()) {
    return error->as_string();
  }
  if (error && error->is_object()) {
    return error->string_at("message").value_or("");
  }
  return "";
}

} // namespace

CaptureAnswer fetch_captures(const InstanceAddress& instance, const std::string& path) {
  CaptureAnswer answer;
  const std::string where = instance.listen.text();
  server::LocalResponse result = server::local_get(instance.listen, path, instance.client_token);
  if (result.status == 0) {
    answer.refused = result.refused;
    if (result.refused) {
      return failure(answer, fmt::format("no keyshim answering on {} (start it with `keyshim serve` or "
                                         "`keyshim service install`)",
                                         where));
    }
    return failure(answer, fmt::format("{} accepted the connection but did not answer GET /captures ({}); "
                                       "is it a keyshim, and is it stuck?",
                                       where, result.error));
  }
  answer.http_status = result.status;
  answer.body = result.body;
  answer.json = util::parse_json(result.body);
  if (result.status == 401) {
    return failure(answer, instance.client_token.empty()
                               ? fmt::format("{} requires a client_token for /captures: pass -c with the "
                                             "pool file it serves, which sets client_token",
                                             where)
                               : fmt::format("{} refused the client_token from {}: pass -c with the file it "
                                             "serves",
                                             where, instance.config_path));
  }
  if (result.status == 404 && answer.json && !error_message(*answer.json).empty()) {
    return failure(answer, error_message(*answer.json)); // "no capture 12: the ring holds 3..202"
  }
  if (result.status != 200 || !answer.json || !answer.json->is_object()) {
    std::string said = answer.json ? error_message(*answer.json) : "";
    return failure(answer, fmt::format("{} answered GET {} with HTTP {}{}: is it a keyshim, and one recent "
                                       "enough to capture requests?",
                                       where, path, result.status, said.empty() ? "" : " (" + said + ")"));
  }
  return answer;
}

std::string captures_path(std::uint64_t after, const std::string& pool, std::optional<int> status) {
  std::string path = "/captures";
  char sep = '?';
  auto add = [&](std::string_view name, const std::string& value) {
    path += fmt::format("{}{}={}", sep, name, util::percent_encode(value));
    sep = '&';
  };
  if (after > 0) {
    add("after", std::to_string(after));
  }
  if (!pool.empty()) {
    add("pool", pool);
  }
  if (status) {
    add("status", std::to_string(*status));
  }
  return path;
}

} // namespace keyshim::cli
