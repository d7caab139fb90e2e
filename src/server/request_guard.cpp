#include "server/request_guard.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <arpa/inet.h>

namespace keyshim::server {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `name` is a dotted quad in 127.0.0.0/8, read as inet_pton(AF_INET)
// reads one: four decimal parts of 0 to 255 without leading zeros, so
// "127.1", "0x7f.0.0.1" and "0127.0.0.1" are no address. Every request
// asks, so without a copy of the name and without inet_pton's setup.
bool is_loopback_v4(std::string_view name) {
  unsigned first = 0;
  std::size_t at = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0 && (at >= name.size() || name[at++] != '.')) {
      return false;
    }
    std::size_t start = at;
    unsigned value = 0;
    while (at < name.size() && at - start < 3 && name[at] >= '0' && name[at] <= '9') {
      value = value * 10 + static_cast<unsigned>(name[at++] - '0');
    }
    if (at == start || value > 255 || (at - start > 1 && name[start] == '0')) {
      return false;
    }
    first = part == 0 ? value : first;
  }
  return at == name.size() && first == 127;
}

} // namespace

bool is_loopback_host_header(std::string_view host) {
  if (host.empty()) {
    return true;
  }
  if (host.front() == '[') {
    std::size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) {
      return false;
    }
    std::string name(host.substr(1, close - 1));
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
  return util::iequals(host, "localhost") || util::iequals(host, "localhost.") || is_loopback_v4(host);
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

bool presents_token(const relay::RequestHead& head, const util::Secret& token) {
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
