#pragma once
// HTTP proxies for upstream connections: the `proxy` setting's URL language
// and which proxy, if any, a key's connections go through (the setting, or
// the environment by curl's rules). Pure: the environment is read through an
// injected lookup, so tests never call setenv.
#include "util/secret.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::config {

struct UpstreamUrl;

// An HTTP proxy reached in plain text; upstream connections tunnel through it
// with CONNECT. Its credentials never leave this struct in printable form.
struct ProxyUrl {
  std::string host; // lowercased, without brackets for IPv6
  int port = 1080;  // curl's default proxy port
  // "Basic base64(user:password)", the Proxy-Authorization value, when the
  // URL carries credentials.
  std::optional<util::Secret> authorization;

  // "host:port" / "[v6]:port": for CONNECT lines and messages.
  std::string authority() const;
  // "http://host:port", or "http://***@host:port" when there are credentials:
  // the only form logs, `check` and status may show.
  std::string text() const;
};

// The `proxy` setting as written in [upstream].
struct ProxySetting {
  std::optional<ProxyUrl> url; // nullopt: `proxy = ""`, connect directly and ignore the environment
};

// Parse "http://[user[:password]@]host[:port][/]" or a bare "host[:port]"
// (taken as http://, as curl does). User and password are percent-decoded.
// https:// and socks proxies are refused. nullopt with `error` set when
// invalid; `error` never quotes the text, which may hold a password.
std::optional<ProxyUrl> parse_proxy_url(std::string_view text, std::string& error);

// The `proxy` setting's value: "" means none, anything else parse_proxy_url.
std::optional<ProxySetting> parse_proxy_setting(std::string_view text, std::string& error);

// getenv-like: the value of a variable, or nullptr when it is not set.
using EnvLookup = std::function<const char*(const char*)>;
// The process environment (std::getenv).
EnvLookup process_env();

// Whether `host` is listed in a curl-style no_proxy value (see proxy.cpp).
bool no_proxy_matches(std::string_view no_proxy, std::string_view host);

struct ProxyChoice {
  std::optional<ProxyUrl> proxy; // nullopt: connect directly
  // Non-empty when the environment names a proxy keyshim cannot use: a load
  // problem naming the variable (never its value).
  std::string problem;
};

// The proxy for connections to `upstream`: the pool's `proxy` setting when it
// is given (for every upstream, loopback included), else the environment by
// curl's rules, never for loopback upstreams. An empty `env` stands for an
// environment without proxy variables.
ProxyChoice choose_proxy(const UpstreamUrl& upstream, const std::optional<ProxySetting>& setting,
                         const EnvLookup& env);

} // namespace keyshim::config
