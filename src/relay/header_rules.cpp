#include "relay/header_rules.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <array>
#include <set>

namespace keyshim::relay {
namespace {

constexpr std::array<std::string_view, 9> k_hop_by_hop = {
    "connection", "keep-alive",          "proxy-connection",  "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authorization", "proxy-authenticate"};

// Headers a client uses to send its (placeholder) key. The pool key replaces
// them; forwarding the client's value would leak a shim token upstream or
// confuse the provider with two credentials.
constexpr std::array<std::string_view, 4> k_credential_headers = {"authorization", "x-api-key",
                                                                  "x-goog-api-key", "api-key"};

// Headers httplib's server inserts into every request; they never came from the client.
constexpr std::array<std::string_view, 4> k_pseudo_headers = {"remote_addr", "remote_port", "local_addr",
                                                              "local_port"};

template <std::size_t N> bool in_list(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(),
                     [&](std::string_view entry) { return util::iequals(entry, name); });
}

bool has_crlf(std::string_view value) {
  return value.find_first_of("\r\n") != std::string_view::npos;
}

// Names listed in Connection headers ("Connection: keep-alive, X-Foo").
std::set<std::string> connection_named(const httplib::Headers& headers) {
  std::set<std::string> names;
  auto range = headers.equal_range("Connection");
  for (auto it = range.first; it != range.second; ++it) {
    std::string_view value = it->second;
    while (!value.empty()) {
      std::size_t comma = value.find(',');
      std::string_view token = util::trim(value.substr(0, comma));
      if (!token.empty()) {
        names.insert(util::to_lower(token));
      }
      value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    }
  }
  return names;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = util::ascii_lower(c);
  return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else if (text[i] == '+') {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string percent_encode(std::string_view text) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    bool unreserved = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                      u == '-' || u == '.' || u == '_' || u == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += k_hex[u >> 4];
      out += k_hex[u & 0xf];
    }
  }
  return out;
}

} // namespace

bool is_hop_by_hop(std::string_view name) {
  return in_list(k_hop_by_hop, name);
}

httplib::Headers upstream_request_headers(const httplib::Headers& client_headers) {
  std::set<std::string> named = connection_named(client_headers);
  httplib::Headers out;
  for (const auto& [name, value] : client_headers) {
    if (is_hop_by_hop(name) || named.count(util::to_lower(name)) || util::iequals(name, "host") ||
        util::iequals(name, "content-length") || util::iequals(name, "expect") ||
        in_list(k_credential_headers, name) || in_list(k_pseudo_headers, name) || has_crlf(value)) {
      continue;
    }
    out.emplace(name, value);
  }
  return out;
}

void apply_auth(const config::Auth& auth, const std::string& key, httplib::Headers& headers,
                std::string& target) {
  switch (auth.style) {
  case config::AuthStyle::bearer:
    headers.emplace("Authorization", "Bearer " + key);
    break;
  case config::AuthStyle::x_api_key:
    headers.emplace("x-api-key", key);
    break;
  case config::AuthStyle::x_goog_api_key:
    headers.emplace("x-goog-api-key", key);
    break;
  case config::AuthStyle::api_key:
    headers.emplace("api-key", key);
    break;
  case config::AuthStyle::query:
    target = remove_query_param(target, auth.query_param);
    target += target.find('?') == std::string::npos ? '?' : '&';
    target += auth.query_param + "=" + percent_encode(key);
    break;
  }
}

std::string remove_query_param(std::string_view target, std::string_view name) {
  std::size_t question = target.find('?');
  if (question == std::string_view::npos) {
    return std::string(target);
  }
  std::string out(target.substr(0, question));
  std::string_view query = target.substr(question + 1);
  bool first = true;
  while (true) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::string_view key = pair.substr(0, pair.find('='));
    if (!pair.empty() && percent_decode(key) != name) {
      out += first ? '?' : '&';
      out += pair;
      first = false;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string query_param(std::string_view target, std::string_view name) {
  std::size_t question = target.find('?');
  if (question == std::string_view::npos) {
    return {};
  }
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::size_t eq = pair.find('=');
    if (percent_decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string{} : percent_decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return {};
}

httplib::Headers client_response_headers(const httplib::Headers& upstream_headers) {
  std::set<std::string> named = connection_named(upstream_headers);
  httplib::Headers out;
  for (const auto& [name, value] : upstream_headers) {
    if (is_hop_by_hop(name) || named.count(util::to_lower(name)) || util::iequals(name, "content-length") ||
        has_crlf(value)) {
      continue;
    }
    out.emplace(name, value);
  }
  return out;
}

} // namespace keyshim::relay
