#include "relay/json_error.hpp"

#include "util/json.hpp"

namespace keyshim::relay {

std::string json_error_body(std::string_view message, std::string_view type, std::string_view code) {
  using util::Json;
  Json error;
  error.add("message", Json::make_string(std::string(message)))
      .add("type", Json::make_string(std::string(type)))
      .add("code", Json::make_string(std::string(code)));
  return Json().add("error", std::move(error)).dump();
}

} // namespace keyshim::relay
