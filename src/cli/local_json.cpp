#include "cli/local_json.hpp"

#include "server/local_client.hpp"

#include <fmt/format.h>

namespace keyshim::cli {

LocalAnswer failed(LocalAnswer answer, std::string error) {
  answer.error = std::move(error);
  return answer;
}

LocalAnswer local_get_json(const InstanceAddress& instance, const std::string& path) {
  LocalAnswer answer;
  const std::string where = instance.listen.text();
  server::LocalResponse result = server::local_get(instance.listen, path, instance.client_token);
  if (result.status == 0) {
    answer.refused = result.refused;
    if (result.refused) {
      return failed(answer, fmt::format("no keyshim answering on {} (start it with `keyshim serve` or "
                                        "`keyshim service install`)",
                                        where));
    }
    return failed(answer, fmt::format("{} accepted the connection but did not answer GET {} ({}); is it "
                                      "a keyshim, and is it stuck?",
                                      where, path, result.error));
  }
  answer.http_status = result.status;
  answer.body = std::move(result.body);
  answer.json = util::parse_json(answer.body);
  if (result.status != 401) {
    return answer;
  }
  const std::string page = path.substr(0, path.find('?'));
  if (instance.client_token.empty()) {
    return failed(answer, fmt::format("{} requires a client_token for {}: pass -c with the pool file it "
                                      "serves, which sets client_token",
                                      where, page));
  }
  return failed(answer, fmt::format("{} refused the client_token from {}: the running instance was started "
                                    "with a different one (run `keyshim reload` after editing the file, or "
                                    "pass -c with the file it serves)",
                                    where, instance.config_path));
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

} // namespace keyshim::cli
