#include "cli/capture_client.hpp"

#include "util/ascii.hpp"

#include <fmt/format.h>

namespace keyshim::cli {

CaptureAnswer fetch_captures(const InstanceAddress& instance, const std::string& path) {
  CaptureAnswer answer = local_get_json(instance, path);
  if (!answer.ok()) {
    return answer;
  }
  const int status = answer.http_status;
  if (status == 404 && answer.json && !error_message(*answer.json).empty()) {
    return failed(answer, error_message(*answer.json)); // "no capture 12: the ring holds 3..202"
  }
  if (status != 200 || !answer.json || !answer.json->is_object()) {
    std::string said = answer.json ? error_message(*answer.json) : "";
    return failed(answer,
                  fmt::format("{} answered GET {} with HTTP {}{}: is it a keyshim, and one recent "
                              "enough to capture requests?",
                              instance.listen.text(), path, status, said.empty() ? "" : " (" + said + ")"));
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
