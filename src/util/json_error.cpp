#include "util/json_error.hpp"

#include "util/json.hpp"

namespace keyshim::util {

std::string json_error_body(std::string_view message, std::string_view type, std::string_view code) {
  Json error;
  error.add("message", Json::make_string(std::string(message)))
      .add("type", Json::make_string(std::string(type)))
      .add("code", Json::make_string(std::string(code)));
  return Json().add("error", std::move(error)).dump();
}

} // namespace keyshim::util
