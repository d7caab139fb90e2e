#pragma once
// Which headers cross the relay, in each direction, and where the pool key goes.
#include "config/config.hpp"

#include <httplib.h>

#include <string>
#include <string_view>

namespace keyshim::relay {

// Request headers for the upstream: the client's headers minus hop-by-hop
// headers (RFC 9110 §7.6.1 and those named in Connection), Host,
// Content-Length (re-computed), httplib's pseudo-headers, every credential
// header a client might carry, and any value containing CR or LF (httplib
// percent-decodes header values, so "%0D%0A" would become header injection).
httplib::Headers upstream_request_headers(const httplib::Headers& client_headers);

// Place `key` as `auth` says: a header, or the query parameter in `target`.
void apply_auth(const config::Auth& auth, const std::string& key, httplib::Headers& headers,
                std::string& target);

// `target` without any occurrence of the query parameter `name`.
std::string remove_query_param(std::string_view target, std::string_view name);

// The value of query parameter `name` in `target` (percent-decoded), or "".
std::string query_param(std::string_view target, std::string_view name);

// Response headers for the client: the upstream's minus hop-by-hop headers and
// Content-Length (httplib frames the body itself: chunked for a stream,
// Content-Length for a buffered answer).
httplib::Headers client_response_headers(const httplib::Headers& upstream_headers);

// True for RFC 9110 hop-by-hop header names (case-insensitive).
bool is_hop_by_hop(std::string_view name);

} // namespace keyshim::relay
