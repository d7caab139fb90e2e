#include "config/config.hpp"

#include "util/ascii.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace keyshim::config {
namespace {

// "8787" -> 8787; nullopt unless the whole text is a number in [0, 65535].
std::optional<int> parse_port(const std::string& text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 0 || port > 65535) {
    return std::nullopt;
  }
  return port;
}

// Split "host", "host:port", "[v6]" or "[v6]:port". `port_text` is empty when
// there is no port. False when brackets are unbalanced.
bool split_host_port(const std::string& text, std::string& host, std::string& port_text) {
  if (!text.empty() && text.front() == '[') {
    std::size_t close = text.find(']');
    if (close == std::string::npos) {
      return false;
    }
    host = text.substr(1, close - 1);
    std::string rest = text.substr(close + 1);
    if (rest.empty()) {
      port_text.clear();
      return true;
    }
    if (rest.front() != ':') {
      return false;
    }
    port_text = rest.substr(1);
    return true;
  }
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    host = text;
    port_text.clear();
    return true;
  }
  if (text.find(':') != colon) {
    return false; // a bare IPv6 address: needs brackets to carry a port
  }
  host = text.substr(0, colon);
  port_text = text.substr(colon + 1);
  return true;
}

std::string bracket_if_v6(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

} // namespace

std::string Auth::text() const {
  switch (style) {
  case AuthStyle::bearer:
    return "bearer";
  case AuthStyle::x_api_key:
    return "x-api-key";
  case AuthStyle::x_goog_api_key:
    return "x-goog-api-key";
  case AuthStyle::api_key:
    return "api-key";
  case AuthStyle::query:
    return "query:" + query_param;
  }
  return "bearer";
}

const char* to_string(Strategy strategy) {
  switch (strategy) {
  case Strategy::ordered:
    return "ordered";
  case Strategy::round_robin:
    return "round-robin";
  case Strategy::least_recently_used:
    return "least-recently-used";
  }
  return "ordered";
}

const char* to_string(CaptureMode mode) {
  switch (mode) {
  case CaptureMode::off:
    return "off";
  case CaptureMode::errors:
    return "errors";
  case CaptureMode::all:
    return "all";
  }
  return "errors";
}

std::string UpstreamUrl::text() const {
  int default_port = tls() ? 443 : 80;
  std::string out = scheme + "://" + bracket_if_v6(host);
  if (port != default_port) {
    out += fmt::format(":{}", port);
  }
  return out + path_prefix;
}

std::optional<UpstreamUrl> parse_upstream_url(const std::string& text, std::string& error) {
  std::size_t sep = text.find("://");
  if (sep == std::string::npos) {
    error = "must start with https:// (or http:// for a loopback host)";
    return std::nullopt;
  }
  UpstreamUrl url;
  url.scheme = util::to_lower(text.substr(0, sep));
  if (url.scheme != "https" && url.scheme != "http") {
    error = "must start with https:// (or http:// for a loopback host)";
    return std::nullopt;
  }
  std::string rest = text.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string::npos) {
    error = "must not carry a query or fragment; give scheme, host and an optional path prefix";
    return std::nullopt;
  }
  std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) {
    // Never echo the URL here: the user part may hold a credential.
    error = "must not carry credentials; give the key with \"key\", \"key_env\" or \"key_cmd\"";
    return std::nullopt;
  }
  std::string port_text;
  if (!split_host_port(authority, url.host, port_text) || url.host.empty()) {
    error = "has no valid host; write it like \"https://api.openai.com\"";
    return std::nullopt;
  }
  url.host = util::to_lower(url.host);
  url.port = url.tls() ? 443 : 80;
  if (!port_text.empty()) {
    std::optional<int> port = parse_port(port_text);
    if (!port || *port == 0) {
      error = fmt::format("has an invalid port \"{}\"; use a number from 1 to 65535", port_text);
      return std::nullopt;
    }
    url.port = *port;
  }
  while (!path.empty() && path.back() == '/') {
    path.pop_back();
  }
  url.path_prefix = path;
  if (!url.tls() && !is_loopback_host(url.host)) {
    error = fmt::format("uses http:// to \"{}\", which is not a loopback host: keys would cross the "
                        "network unencrypted; use https://",
                        url.host);
    return std::nullopt;
  }
  return url;
}

std::string DayZone::text() const {
  if (local) {
    return "local";
  }
  if (utc_offset_minutes == 0) {
    return "UTC";
  }
  int minutes = utc_offset_minutes < 0 ? -utc_offset_minutes : utc_offset_minutes;
  return fmt::format("{}{:02}:{:02}", utc_offset_minutes < 0 ? '-' : '+', minutes / 60, minutes % 60);
}

std::string ListenAddress::text() const {
  return fmt::format("{}:{}", bracket_if_v6(host), port);
}

std::optional<ListenAddress> parse_listen_address(const std::string& text, std::string& error) {
  ListenAddress address;
  std::string port_text;
  if (!split_host_port(text, address.host, port_text) || address.host.empty() || port_text.empty()) {
    error = fmt::format("must be HOST:PORT like \"127.0.0.1:8787\" or \"[::1]:8787\", not \"{}\"", text);
    return std::nullopt;
  }
  std::optional<int> port = parse_port(port_text);
  if (!port) {
    error = fmt::format("has an invalid port in \"{}\"; use a number from 1 to 65535", text);
    return std::nullopt;
  }
  address.port = *port;
  address.host = util::to_lower(address.host);
  if (!is_loopback_host(address.host)) {
    error = fmt::format("must be a loopback address (127.0.0.0/8, [::1] or localhost), not \"{}\": "
                        "whoever can reach keyshim can use your API keys",
                        text);
    return std::nullopt;
  }
  return address;
}

bool is_loopback_host(const std::string& raw_host) {
  std::string host = util::to_lower(raw_host);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") {
    return true;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

const PoolConfig* Config::find_pool(std::string_view name) const {
  for (const PoolConfig& pool : pools) {
    if (pool.name == name) {
      return &pool;
    }
  }
  return nullptr;
}

std::size_t Config::key_count() const {
  std::size_t count = 0;
  for (const PoolConfig& pool : pools) {
    count += pool.keys.size();
  }
  return count;
}

} // namespace keyshim::config
