#include "relay/header_rules.hpp"

#include "relay/redact.hpp"
#include "util/ascii.hpp"
#include "util/http_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace keyshim::relay {
namespace {

// Room for a typical head in one allocation, and small enough for glibc's
// per-thread cache (blocks up to 1032 bytes): 1024 bytes plus the string's
// terminator missed it, and every request paid malloc's slow path twice.
constexpr std::size_t k_head_reserve = 1000;

constexpr std::array<std::string_view, 9> k_hop_by_hop = {
    "connection", "keep-alive",          "proxy-connection",  "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authorization", "proxy-authenticate"};

// Headers a client uses to send its (placeholder) key. The pool key replaces
// them; forwarding the client's value would leak a shim token upstream or
// confuse the provider with two credentials.
constexpr std::array<std::string_view, 4> k_credential_headers = {"authorization", "x-api-key",
                                                                  "x-goog-api-key", "api-key"};

// Calls `visit` with each entry of a comma-separated field value, trimmed
// (empty ones too), until it returns true: whether one did.
template <class Visit> bool any_list_entry(std::string_view list, Visit visit) {
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    if (visit(util::trim(list.substr(0, comma)))) {
      return true;
    }
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

template <std::size_t N> bool in_list(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(),
                     [&](std::string_view entry) { return util::iequals(entry, name); });
}

// Whether `name` is listed in a Connection field ("Connection: keep-alive, X-Foo").
bool named_by_connection(const HeadFields& fields, std::string_view name) {
  bool listed = false;
  for_each_field(fields, http::field::connection,
                 [&](std::string_view value) { listed = listed || lists_token(value, name); });
  return listed;
}

// Whether a Connection field names fields of its own to drop ("Connection:
// X-Foo"). Most clients send only "keep-alive" or "close", which name none
// that is not dropped anyway (Keep-Alive is hop-by-hop; "close" is reserved
// as a field name, RFC 9110 section 18.4): such heads skip the per-field
// lookup of the Connection list.
bool connection_names_fields(const HeadFields& fields) {
  bool names = false;
  for_each_field(fields, http::field::connection, [&](std::string_view list) {
    names = names || any_list_entry(list, [](std::string_view token) {
              return !token.empty() && !util::iequals(token, "close") && !util::iequals(token, "keep-alive");
            });
  });
  return names;
}

// `target` without the query parameters named "key" (Google's convention,
// whatever the pool's auth style) or in `names`, appended to `out`.
void append_without_auth_params(std::string& out, std::string_view target,
                                const std::vector<std::string>& names) {
  std::size_t question = target.find('?');
  out += target.substr(0, question);
  if (question == std::string_view::npos) {
    return;
  }
  std::string_view query = target.substr(question + 1);
  bool first = true;
  while (true) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::string name = util::percent_decode(pair.substr(0, pair.find('=')));
    if (!pair.empty() && name != "key" && std::find(names.begin(), names.end(), name) == names.end()) {
      out += first ? '?' : '&';
      out += pair;
      first = false;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
}

// What a field is to the relay's rules: by Beast's enum for the names it
// knows (one integer compare), by name only for the others. Asking each
// rule by name took up to 18 case-insensitive compares per field.
enum class Role {
  plain,
  hop_by_hop, // but Upgrade
  upgrade,
  credential,
  replay_control,
  host,
  content_length,
  expect,
  ws_extensions,
  ws_protocol
};

Role role_of(const HeadFields::value_type& field) {
  switch (field.name()) {
  case http::field::connection:
  case http::field::keep_alive:
  case http::field::proxy_connection:
  case http::field::te:
  case http::field::trailer:
  case http::field::transfer_encoding:
  case http::field::proxy_authorization:
  case http::field::proxy_authenticate:
    return Role::hop_by_hop;
  case http::field::upgrade:
    return Role::upgrade;
  case http::field::authorization:
    return Role::credential;
  case http::field::host:
    return Role::host;
  case http::field::content_length:
    return Role::content_length;
  case http::field::expect:
    return Role::expect;
  case http::field::sec_websocket_extensions:
    return Role::ws_extensions;
  case http::field::sec_websocket_protocol:
    return Role::ws_protocol;
  case http::field::unknown:
    break;
  default:
    return Role::plain;
  }
  std::string_view name = field.name_string();
  if (is_credential(name)) {
    return Role::credential;
  }
  return is_replay_control(name) ? Role::replay_control : Role::plain;
}

// The Host field's value, written into the head: the upstream's host, and
// its port unless it is the scheme's default. No string of its own: this
// runs for every request.
void append_host(std::string& out, const config::UpstreamUrl& url) {
  bool default_port = (url.tls() && url.port == 443) || (!url.tls() && url.port == 80);
  bool v6 = url.host.find(':') != std::string::npos;
  if (v6) {
    out += '[';
  }
  out += url.host;
  if (v6) {
    out += ']';
  }
  if (!default_port) {
    std::array<char, 8> digits{};
    auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), url.port);
    out += ':';
    out.append(digits.data(), ec == std::errc() ? end : digits.data());
  }
}

void append_auth(std::string& head, const config::Auth& auth, const std::string& key) {
  switch (auth.style) {
  case config::AuthStyle::bearer:
    util::append_field(head, "Authorization", [&](std::string& out) { out.append("Bearer ").append(key); });
    break;
  case config::AuthStyle::x_api_key:
    util::append_field(head, "x-api-key", key);
    break;
  case config::AuthStyle::x_goog_api_key:
    util::append_field(head, "x-goog-api-key", key);
    break;
  case config::AuthStyle::api_key:
    util::append_field(head, "api-key", key);
    break;
  case config::AuthStyle::query:
    break; // placed in the target
  }
}

} // namespace

bool lists_token(std::string_view list, std::string_view token) {
  return any_list_entry(list, [&](std::string_view entry) { return util::iequals(entry, token); });
}

bool is_hop_by_hop(std::string_view name) {
  return in_list(k_hop_by_hop, name);
}

bool is_credential(std::string_view name) {
  return in_list(k_credential_headers, name);
}

bool is_replay_control(std::string_view name) {
  return util::iequals(name, k_replay_field) || util::iequals(name, k_key_field);
}

bool is_websocket_upgrade(const RequestHead& request) {
  if (request.method() != http::verb::get || !named_by_connection(request, "upgrade")) {
    return false;
  }
  bool websocket = false;
  for_each_field(request, http::field::upgrade,
                 [&](std::string_view value) { websocket = websocket || lists_token(value, "websocket"); });
  return websocket;
}

// Claude Code sends the first; Codex the second since 0.171, the third before.
std::string_view session_header(const RequestHead& request) {
  for (const auto& field : request) {
    if (field.name() != http::field::unknown) {
      continue; // none of the three is a name Beast knows
    }
    std::string_view name = field.name_string();
    if (util::iequals(name, "x-claude-code-session-id") || util::iequals(name, "session-id") ||
        util::iequals(name, "session_id")) {
      return field.value();
    }
  }
  return {};
}

bool is_responses_socket(std::string_view target) {
  constexpr std::string_view k_suffix = "/responses";
  std::string_view path = target.substr(0, target.find('?'));
  return path.size() >= k_suffix.size() && path.substr(path.size() - k_suffix.size()) == k_suffix;
}

std::string without_key_protocols(std::string_view protocols) {
  constexpr std::string_view k_key_prefix = "openai-insecure-api-key.";
  std::string out;
  any_list_entry(protocols, [&](std::string_view entry) {
    bool key = entry.size() >= k_key_prefix.size() &&
               util::iequals(entry.substr(0, k_key_prefix.size()), k_key_prefix);
    if (!entry.empty() && !key) {
      out.append(out.empty() ? "" : ", ").append(entry);
    }
    return false; // every entry
  });
  return out;
}

std::string upstream_target(std::string_view client_target, const std::vector<std::string>& query_auth_params,
                            const config::KeyConfig& key) {
  return upstream_target(client_target, query_auth_params, key, key.secret);
}

std::string upstream_target(std::string_view client_target, const std::vector<std::string>& query_auth_params,
                            const config::KeyConfig& key, const util::Secret& secret) {
  std::string target;
  target.reserve(key.base_url.path_prefix.size() + client_target.size());
  target += key.base_url.path_prefix;
  append_without_auth_params(target, client_target, query_auth_params);
  if (key.auth.style == config::AuthStyle::query) {
    target += target.find('?') == std::string::npos ? '?' : '&';
    target += key.auth.query_param + "=" + util::percent_encode(secret.reveal());
  }
  return target;
}

std::string upstream_head(const RequestHead& client, std::string_view target, const config::KeyConfig& key,
                          std::optional<std::size_t> body_size) {
  return upstream_head(client, target, key, key.secret, body_size);
}

std::string upstream_head(const RequestHead& client, std::string_view target, const config::KeyConfig& key,
                          const util::Secret& secret, std::optional<std::size_t> body_size) {
  std::string head;
  head.reserve(k_head_reserve);
  util::append_request_line(head, client.method_string(), target);
  util::append_field(head, "Host", [&](std::string& out) { append_host(out, key.base_url); });
  const bool connection_lists = connection_names_fields(client);
  const bool websocket = is_websocket_upgrade(client);
  for (const auto& field : client) {
    std::string_view name = field.name_string();
    Role role = role_of(field);
    if (websocket && role == Role::upgrade) {
      util::append_field(head, name, field.value());
      continue;
    }
    bool relayed = role == Role::plain || role == Role::ws_extensions || role == Role::ws_protocol;
    if (!relayed || (connection_lists && named_by_connection(client, name))) {
      continue; // hop-by-hop, credentials, replay controls, Host, framing, Expect
    }
    if (websocket && role == Role::ws_extensions && is_responses_socket(target)) {
      continue;
    }
    if (websocket && role == Role::ws_protocol) {
      if (std::string kept = without_key_protocols(field.value()); !kept.empty()) {
        util::append_field(head, name, kept);
      }
      continue;
    }
    util::append_field(head, name, field.value());
  }
  if (websocket) {
    util::append_field(head, "Connection", "Upgrade");
  }
  append_auth(head, key.auth, secret.reveal());
  if (body_size) {
    util::append_content_length(head, *body_size);
  }
  util::end_head(head);
  return head;
}

std::string client_head(const ResponseHead& upstream, Framing framing,
                        std::optional<std::uint64_t> content_length, bool close, const Redactor& redact) {
  std::string head;
  head.reserve(k_head_reserve);
  util::append_status_line(head, static_cast<int>(upstream.result_int()), upstream.reason());
  const bool connection_lists = connection_names_fields(upstream);
  for (const auto& field : upstream) {
    std::string_view name = field.name_string();
    Role role = role_of(field);
    if (framing == Framing::upgrade && role == Role::upgrade) {
      util::append_field(head, name, field.value());
      continue;
    }
    bool keep_length = framing == Framing::none && role == Role::content_length;
    if (role == Role::hop_by_hop || role == Role::upgrade || (role == Role::content_length && !keep_length) ||
        (connection_lists && named_by_connection(upstream, name))) {
      continue;
    }
    util::append_field(head, name, [&](std::string& out) { redact.append(out, field.value()); });
  }
  if (framing == Framing::content_length && content_length) {
    util::append_content_length(head, *content_length);
  } else if (framing == Framing::chunked) {
    util::append_field(head, "Transfer-Encoding", "chunked");
  }
  if (framing == Framing::upgrade) {
    util::append_field(head, "Connection", "Upgrade");
  } else if (close) {
    util::append_field(head, "Connection", "close");
  }
  util::end_head(head);
  return head;
}

} // namespace keyshim::relay
