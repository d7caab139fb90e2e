#pragma once
// Who may use the port that holds the keys. A web page the user visits can
// make the browser send requests to 127.0.0.1 (CSRF), and a hostile DNS name
// can resolve to it (DNS rebinding); both are recognisable by their Origin
// and Host headers. Pure functions.
#include "relay/beast.hpp"
#include "util/secret.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace keyshim::server {

// Host names a loopback address or localhost, with an optional port. An
// absent Host (HTTP/1.0) is accepted: rebinding always carries one.
bool is_loopback_host_header(std::string_view host);

// A request without Origin passes (CLIs and SDKs send none); one with an
// Origin passes only when it is listed exactly (scheme://host[:port]).
bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed);

// Whether the client presented `token` as its key, in any of the places
// clients put one: Authorization (Bearer), x-api-key, x-goog-api-key,
// api-key, or the `key` query parameter. Constant-time comparison.
bool presents_token(const relay::RequestHead& head, const util::Secret& token);

} // namespace keyshim::server
