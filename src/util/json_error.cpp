#include "util/json_error.hpp"

#include "util/json.hpp"

#include <utility>

namespace keyshim::util {
namespace {

struct StatusWords {
  int status;
  const char* anthropic; // https://docs.anthropic.com/en/api/errors
  const char* google;    // google.rpc.Code names
};

constexpr StatusWords k_status_words[] = {
    {400, "invalid_request_error", "INVALID_ARGUMENT"},
    {401, "authentication_error", "UNAUTHENTICATED"},
    {403, "permission_error", "PERMISSION_DENIED"},
    {404, "not_found_error", "NOT_FOUND"},
    {413, "request_too_large", "INVALID_ARGUMENT"},
    {429, "rate_limit_error", "RESOURCE_EXHAUSTED"},
    {503, "api_error", "UNAVAILABLE"},
    {529, "overloaded_error", "UNAVAILABLE"},
};

StatusWords words_for(int status) {
  for (const StatusWords& words : k_status_words) {
    if (words.status == status) {
      return words;
    }
  }
  return status >= 500 ? StatusWords{status, "api_error", "INTERNAL"}
                       : StatusWords{status, "invalid_request_error", "FAILED_PRECONDITION"};
}

} // namespace

std::string json_error_body(std::string_view message, std::string_view type, std::string_view code) {
  Json error;
  error.add("message", Json::make_string(std::string(message)))
      .add("type", Json::make_string(std::string(type)))
      .add("code", Json::make_string(std::string(code)));
  return Json().add("error", std::move(error)).dump();
}

std::string api_error_body(ErrorShape shape, int status, std::string_view message, std::string_view type,
                           std::string_view code) {
  const StatusWords words = words_for(status);
  Json error;
  switch (shape) {
  case ErrorShape::openai:
    return json_error_body(message, type, code);
  case ErrorShape::anthropic:
    error.add("type", Json::make_string(words.anthropic))
        .add("message", Json::make_string(std::string(message)));
    return Json().add("type", Json::make_string("error")).add("error", std::move(error)).dump();
  case ErrorShape::google:
    error.add("code", Json::make_number(status))
        .add("message", Json::make_string(std::string(message)))
        .add("status", Json::make_string(words.google));
    return Json().add("error", std::move(error)).dump();
  }
  return json_error_body(message, type, code);
}

} // namespace keyshim::util
