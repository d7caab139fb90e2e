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

namespace {

// The value of query parameter `name` in `target` (percent-decoded), or "".
std::string query_param(std::string_view target, std::string_view name) {
  std::size_t question = target.find('?');
  std::string_view query =
      question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::size_t eq = pair.find('=');
    if (util::percent_decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string{} : util::percent_decode(pair.substr(eq + 1));
    }
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }
  return {};
}

} // namespace

bool presents_token(const relay::http::request_header<>& head, const util::Secret& token) {
  std::string_view authorization = head["Authorization"];
  if (authorization.size() > 7 && util::iequals(authorization.substr(0, 7), "bearer ")) {
    authorization.remove_prefix(7);
  }
  for (std::string_view candidate :
       {authorization, head["x-api-key"], head["x-goog-api-key"], head["api-key"]}) {
    if (!candidate.empty() && token.equals(std::string(candidate))) {
      return true;
    }
  }
  std::string from_query = query_param(head.target(), "key");
  return !from_query.empty() && token.equals(from_query);
}

} // namespace keyshim::server
