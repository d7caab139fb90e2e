#include "relay/json_error.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {

std::string json_error_body(std::string_view message, std::string_view type, std::string_view code) {
  return fmt::format(R"({{"error":{{"message":"{}","type":"{}","code":"{}"}}}})", util::json_escape(message),
                     util::json_escape(type), util::json_escape(code));
}

} // namespace keyshim::relay
