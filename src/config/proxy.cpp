#include "config/proxy.hpp"

#include "config/config.hpp"
#include "util/ascii.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace keyshim::config {
namespace {

constexpr std::string_view k_form = "http://[user:password@]host[:port]";

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = util::ascii_lower(c);
  return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

// Strict percent-decoding for the user and password: a malformed escape is an
// error rather than a password silently different from the one meant, and
// '+' stays '+' (this is not form encoding).
std::optional<std::string> percent_decode_strict(std::string_view text) {
  std::string out;
  out.reserve(text.size()); // no reallocation leaves a copy behind in freed memory
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      util::wipe(out);
      return std::nullopt;
    }
    int high = hex_value(text[i + 1]);
    int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) {
      util::wipe(out);
      return std::nullopt;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

bool is_ip_literal(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

// A DNS name as a proxy host: letters, digits, '-', '_' and dots.
bool is_host_name(std::string_view host) {
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return !host.empty();
}

// "host[:port]" or "[v6][:port]" into the URL's host and port. Messages never
// quote the input.
bool read_host_port(std::string_view authority, ProxyUrl& url, std::string& error) {
  std::string_view host = authority;
  std::optional<std::string_view> port; // set when a ':' follows the host, even with nothing after it
  bool bracketed = !authority.empty() && authority.front() == '[';
  if (bracketed) {
    std::size_t close = authority.find(']');
    std::string_view rest = close == std::string_view::npos ? "" : authority.substr(close + 1);
    if (close == std::string_view::npos || (!rest.empty() && rest.front() != ':')) {
      error = "has an unbalanced [ ] around its IPv6 host";
      return false;
    }
    host = authority.substr(1, close - 1);
    if (!rest.empty()) {
      port = rest.substr(1);
    }
  } else if (std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    if (authority.find(':') != colon) {
      error = "has an IPv6 host without brackets; write it like \"http://[::1]:3128\"";
      return false;
    }
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  url.host = util::to_lower(host);
  if (url.host.empty()) {
    error = fmt::format("has no host; write it like \"http://proxy.example.com:3128\" ({})", k_form);
    return false;
  }
  bool valid = bracketed ? url.host.find(':') != std::string::npos && is_ip_literal(url.host)
                         : is_ip_literal(url.host) || is_host_name(url.host);
  if (!valid) {
    error = "has an invalid host; give a host name or an IP address";
    return false;
  }
  if (port) {
    int value = 0;
    auto [end, ec] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (port->empty() || ec != std::errc() || end != port->data() + port->size() || value < 1 ||
        value > 65535) {
      error = "has an invalid port; use a number from 1 to 65535";
      return false;
    }
    url.port = value;
  }
  return true;
}

bool read_credentials(std::string_view userinfo, ProxyUrl& url, std::string& error) {
  std::size_t colon = userinfo.find(':');
  std::optional<std::string> user = percent_decode_strict(userinfo.substr(0, colon));
  std::optional<std::string> password =
      percent_decode_strict(colon == std::string_view::npos ? "" : userinfo.substr(colon + 1));
  if (!user || !password || (user->empty() && password->empty())) {
    error = !user || !password ? "has a malformed %-escape in its user or password"
                               : "has an empty user and password before '@'; remove the '@' or give them";
    if (user) {
      util::wipe(*user);
    }
    if (password) {
      util::wipe(*password);
    }
    return false;
  }
  std::string joined = *user + ":" + *password;
  std::string encoded = base64(joined);
  url.authorization = util::Secret("Basic " + encoded);
  util::wipe(joined);
  util::wipe(encoded);
  util::wipe(*user);
  util::wipe(*password);
  return true;
}

std::string bracket_proxy_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Whether IP literal `host` lies in the no_proxy entry `token`: an address,
// optionally with "/bits" (CIDR, curl 7.86 and later). Without bits, or with
// /0 as curl reads it, the whole address must match.
bool ip_entry_matches(const std::string& host, std::string_view token) {
  std::string_view bits_text;
  if (std::size_t slash = token.find('/'); slash != std::string_view::npos) {
    bits_text = token.substr(slash + 1);
    token = token.substr(0, slash);
  }
  std::string entry(token);
  std::array<unsigned char, 16> a{};
  std::array<unsigned char, 16> b{};
  std::size_t length = 0;
  if (inet_pton(AF_INET, host.c_str(), a.data()) == 1) {
    if (inet_pton(AF_INET, entry.c_str(), b.data()) != 1) {
      return false;
    }
    length = 4;
  } else if (inet_pton(AF_INET6, host.c_str(), a.data()) == 1) {
    if (inet_pton(AF_INET6, entry.c_str(), b.data()) != 1) {
      return false;
    }
    length = 16;
  } else {
    return false;
  }
  unsigned bits = static_cast<unsigned>(length * 8);
  if (!bits_text.empty()) {
    unsigned given = 0;
    auto [end, ec] = std::from_chars(bits_text.data(), bits_text.data() + bits_text.size(), given);
    if (ec != std::errc() || end != bits_text.data() + bits_text.size() || given > bits) {
      return false;
    }
    bits = given == 0 ? bits : given;
  }
  std::size_t whole = bits / 8;
  if (std::memcmp(a.data(), b.data(), whole) != 0) {
    return false;
  }
  unsigned rest = bits % 8;
  if (rest == 0) {
    return true;
  }
  auto mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

// Whether host name `name` (lowercase, no trailing dot) is the no_proxy
// entry `token` or one of its subdomains.
bool name_entry_matches(std::string_view name, std::string_view token) {
  if (!token.empty() && token.back() == '.') {
    token.remove_suffix(1);
  }
  if (!token.empty() && token.front() == '.') {
    token.remove_prefix(1);
  }
  if (token.empty() || token.size() > name.size()) {
    return false;
  }
  if (token.size() == name.size()) {
    return util::iequals(token, name);
  }
  std::size_t start = name.size() - token.size();
  return name[start - 1] == '.' && util::iequals(token, name.substr(start));
}

} // namespace

std::string ProxyUrl::authority() const {
  return fmt::format("{}:{}", bracket_proxy_host(host), port);
}

std::string ProxyUrl::text() const {
  return fmt::format("http://{}{}", authorization ? "***@" : "", authority());
}

std::optional<ProxyUrl> parse_proxy_url(std::string_view raw, std::string& error) {
  std::string_view text = util::trim(raw);
  if (text.empty()) {
    error = fmt::format("is empty; give {}", k_form);
    return std::nullopt;
  }
  // curl takes a value without "://" as an http:// proxy ("proxy.corp:3128").
  std::string_view rest = text;
  if (std::size_t sep = text.find("://"); sep != std::string_view::npos) {
    std::string scheme = util::to_lower(text.substr(0, sep));
    rest = text.substr(sep + 3);
    if (scheme == "https") {
      error = fmt::format("is an https:// proxy, which keyshim does not support: it speaks to proxies in "
                          "plain HTTP (the upstream's TLS runs inside the tunnel); give {}",
                          k_form);
      return std::nullopt;
    }
    if (scheme.rfind("socks", 0) == 0) {
      error =
          fmt::format("is a SOCKS proxy, which keyshim does not support; give an HTTP proxy as {}", k_form);
      return std::nullopt;
    }
    if (scheme != "http") {
      error = fmt::format("has a scheme keyshim does not support; give an HTTP proxy as {}", k_form);
      return std::nullopt;
    }
  }
  std::size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view path = end == std::string_view::npos ? "" : rest.substr(end);
  if (!path.empty() && path != "/") {
    error = fmt::format("has a path, query or fragment; a proxy URL is only {}", k_form);
    return std::nullopt;
  }
  ProxyUrl url;
  // The last '@' ends the credentials, so a password with a raw '@' still works.
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    if (!read_credentials(authority.substr(0, at), url, error)) {
      return std::nullopt;
    }
    authority = authority.substr(at + 1);
  }
  if (!read_host_port(authority, url, error)) {
    return std::nullopt;
  }
  return url;
}

std::optional<ProxySetting> parse_proxy_setting(std::string_view text, std::string& error) {
  if (text.empty()) {
    return ProxySetting{};
  }
  std::optional<ProxyUrl> url = parse_proxy_url(text, error);
  if (!url) {
    return std::nullopt;
  }
  return ProxySetting{std::move(url)};
}

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

// curl's no_proxy (7.86 and later, checked against Debian 12's 7.88): entries
// separated by commas or blanks; a value of exactly "*" matches every host
// (" * " or "*,x" do not); a host name matches an entry equal to it or to one
// of its parent domains (a leading dot on the entry changes nothing,
// "example.com" covers "api.example.com" but not "myexample.com"),
// case-insensitively and ignoring one trailing dot on either; an IP literal
// matches only IP entries, written without brackets, exactly or by CIDR
// prefix. The upstream's port plays no part, and an entry carrying a port
// ("example.com:443") is compared as written, so it matches nothing.
bool no_proxy_matches(std::string_view value, std::string_view raw_host) {
  if (value == "*") {
    return true;
  }
  std::string host = util::to_lower(raw_host);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  bool ip = is_ip_literal(host);
  if (!ip && !host.empty() && host.back() == '.') {
    host.pop_back();
  }
  if (host.empty()) {
    return false;
  }
  std::size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && (value[i] == ',' || is_blank(value[i]))) {
      ++i;
    }
    std::size_t start = i;
    while (i < value.size() && value[i] != ',' && !is_blank(value[i])) {
      ++i;
    }
    std::string_view token = value.substr(start, i - start);
    if (token.empty()) {
      continue;
    }
    if (ip ? ip_entry_matches(host, token) : name_entry_matches(host, token)) {
      return true;
    }
  }
  return false;
}

ProxyChoice choose_proxy(const UpstreamUrl& upstream, const std::optional<ProxySetting>& setting,
                         const EnvLookup& env) {
  if (setting) {
    // Named in the file: it applies to every key of the pool, loopback
    // upstreams included (the user asked for it by name), and no_proxy does
    // not override it. A pool whose keys must go direct says proxy = "".
    ProxyChoice choice{setting->url, ""};
    if (choice.proxy && !upstream.tls() && !is_loopback_host(choice.proxy->host)) {
      choice.problem = fmt::format(
          "\"proxy\" {} is not a loopback host, and base_url {} is plain http://: keys would cross "
          "the network unencrypted; use https:// or proxy = \"\"",
          choice.proxy->text(), upstream.text());
    }
    return choice;
  }
  // The environment never applies to loopback upstreams: a corporate proxy
  // cannot reach this machine's 127.0.0.1, and a local test server or model
  // runner must keep working when HTTPS_PROXY is exported for everything else.
  if (!env || is_loopback_host(upstream.host)) {
    return {};
  }
  // curl's variables: https_proxy, then HTTPS_PROXY for https:// upstreams;
  // for http:// only the lowercase http_proxy, because under CGI a request's
  // "Proxy:" header arrives as the variable HTTP_PROXY, and honouring it would
  // let any client redirect the program's own requests ("httpoxy"). As in
  // curl, an empty variable counts as unset. ALL_PROXY is not read: it often
  // names a SOCKS proxy, which keyshim cannot use. (http:// upstreams are
  // loopback only, so in practice only the https variables matter.)
  auto read = [&env](const char* name) -> const char* {
    const char* value = env(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  const char* name = upstream.tls() ? "https_proxy" : "http_proxy";
  const char* value = read(name);
  if (value == nullptr && upstream.tls()) {
    name = "HTTPS_PROXY";
    value = read(name);
  }
  if (value == nullptr) {
    return {};
  }
  const char* no_proxy = read("no_proxy");
  if (no_proxy == nullptr) {
    no_proxy = read("NO_PROXY");
  }
  if (no_proxy != nullptr && no_proxy_matches(no_proxy, upstream.host)) {
    return {};
  }
  std::string error;
  std::optional<ProxyUrl> url = parse_proxy_url(value, error);
  if (!url) {
    return {std::nullopt, fmt::format("the environment variable {} {}; fix or unset it, or set proxy in "
                                      "[upstream] (proxy = \"\" ignores the environment)",
                                      name, error)};
  }
  return {std::move(url), ""};
}

} // namespace keyshim::config
