#pragma once
// Which header fields cross the relay, in each direction, and where the pool
// key goes. Heads are serialised here, field by field as they arrived (name
// case, value bytes, duplicates in their relative order), apart from the
// documented edits: hop-by-hop fields, Host, framing, credentials.
#include "config/config.hpp"
#include "relay/beast.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {

class Redactor;

// True for RFC 9110 hop-by-hop field names (case-insensitive).
bool is_hop_by_hop(std::string_view name);

// True when the comma-separated `list` (a Connection value) names `token`.
bool lists_token(std::string_view list, std::string_view token);

// True for the fields a client uses to send its (placeholder) key.
bool is_credential(std::string_view name);

// The request fields `keyshim replay` sends to its own instance
// (docs/behaviour.md §4.2): never relayed upstream.
inline constexpr std::string_view k_replay_field = "keyshim-replay";
inline constexpr std::string_view k_key_field = "keyshim-key";
// True for keyshim-replay and keyshim-key (case-insensitive).
bool is_replay_control(std::string_view name);

// True for a WebSocket opening handshake (RFC 6455 §4.1): GET with
// `Upgrade: websocket` and `Connection: upgrade`. Other upgrades (h2c) are
// not relayed: their Upgrade field is dropped like any hop-by-hop field.
bool is_websocket_upgrade(const RequestHead& request);

// The value of the first field naming the tool session the request belongs
// to (`X-Claude-Code-Session-Id`, `session-id`, `session_id`, in any case);
// "" when there is none. One pass over the fields.
std::string_view session_header(const RequestHead& request);

// True for OpenAI's Responses WebSocket (a path ending in /responses): its
// events are read as they pass (failures, usage), so keyshim asks the
// upstream for it without permessage-deflate (the client's offer is dropped;
// a WebSocket without compression is what every peer must accept).
bool is_responses_socket(std::string_view target);

// A Sec-WebSocket-Protocol value without the entries that carry a key
// (OpenAI's `openai-insecure-api-key.KEY`): the pool key goes in the auth
// header instead. "" when nothing is left.
std::string without_key_protocols(std::string_view protocols);

// The target for the upstream: the key's base_url path prefix, then the
// client's target without any credential query parameter (`key`, and every
// name in `query_auth_params`), then the key itself when its auth is `query:`.
std::string upstream_target(std::string_view client_target, const std::vector<std::string>& query_auth_params,
                            const config::KeyConfig& key);
// The same with `secret` for the key's own (a key_cmd key's current token).
std::string upstream_target(std::string_view client_target, const std::vector<std::string>& query_auth_params,
                            const config::KeyConfig& key, const util::Secret& secret);

// The whole request head for the upstream: request line, Host, the client's
// fields minus hop-by-hop ones (and those Connection names), Host, framing,
// Expect, credentials and keyshim's replay fields, the key as its auth style says, and Content-Length
// when there is a body (the body was read whole, so it is re-framed). A
// WebSocket handshake keeps `Upgrade` and gets `Connection: Upgrade`.
std::string upstream_head(const RequestHead& client, std::string_view target, const config::KeyConfig& key,
                          std::optional<std::size_t> body_size);
// The same with `secret` for the key's own (a key_cmd key's current token).
std::string upstream_head(const RequestHead& client, std::string_view target, const config::KeyConfig& key,
                          const util::Secret& secret, std::optional<std::size_t> body_size);

// How the response body is framed towards the client.
enum class Framing {
  none,           // no body follows (HEAD, 204, 304): the upstream's Content-Length is kept
  content_length, // the upstream's length: bytes pass raw
  chunked,        // re-chunked as pieces arrive (upstream chunked, or ended by close)
  close,          // raw bytes, ended by closing the connection (HTTP/1.0 clients)
  upgrade,        // a 101: the upstream's Upgrade field and `Connection: Upgrade`, then its bytes
};

// The response head for the client: the upstream's status line and fields
// minus hop-by-hop ones and framing, each value redacted, then the framing
// keyshim writes, and `Connection: close` when the connection ends after it.
std::string client_head(const ResponseHead& upstream, Framing framing,
                        std::optional<std::uint64_t> content_length, bool close, const Redactor& redact);

} // namespace keyshim::relay
