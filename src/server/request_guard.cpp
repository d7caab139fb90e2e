#include "server/request_guard.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <arpa/inet.h>

namespace keyshim::server {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

bool is_loopback_host_header(std::string_view host) {
  if (host.empty()) {
    return true;
  }
  std::string name;
  if (host.front() == '[') {
    std::size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) {
      return false;
    }
    name = std::string(host.substr(1, close - 1));
    in6_addr v6{};
    return inet_pton(AF_INET6, name.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
  }
  std::size_t colon = host.rfind(':');
  if (colon != std::string_view::npos) {
    if (!all_digits(host.substr(colon + 1))) {
      return false;
    }
    host = host.substr(0, colon);
  }
  name = util::to_lower(host);
  if (name == "localhost" || name == "localhost.") {
    return true;
  }
  in_addr v4{};
  // inet_pton accepts only dotted quads: "127.1" or "0x7f.1" style tricks fail.
  return inet_pton(AF_INET, name.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed) {
  return std::find(allowed.begin(), allowed.end(), origin) != allowed.end();
}

bool presents_token(const httplib::Request& req, const util::Secret& token) {
  std::string authorization = req.get_header_value("Authorization");
  if (authorization.size() > 7 && util::iequals(std::string_view(authorization).substr(0, 7), "bearer ")) {
    authorization = authorization.substr(7);
  }
  for (const std::string& candidate :
       {authorization, req.get_header_value("x-api-key"), req.get_header_value("x-goog-api-key"),
        req.get_header_value("api-key"), req.get_param_value("key")}) {
    if (!candidate.empty() && token.equals(candidate)) {
      return true;
    }
  }
  return false;
}

} // namespace keyshim::server
