#pragma once
// The request-head gate. A proxy must refuse what two parsers could read two
// ways (that is how requests are smuggled), so keyshim checks the raw head
// before Beast parses it (exact size caps, obs-fold, framing) and the parsed
// head after (target form, method, Host, Transfer-Encoding). A refused
// request gets one answer and its connection is closed.
#include "relay/beast.hpp"
#include "server/limits.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshim::server {

struct HeadVerdict {
  int status = 0;      // 0 = acceptable; else the status to answer before closing
  std::string message; // why, for the client
};

// Offset just past the blank line ending the head, or npos while incomplete.
std::size_t find_head_end(std::string_view buffered);

// Judge a complete raw head (through its blank line): line lengths (414 for
// the request line, 431 for a header), conflicting Content-Length or
// Transfer-Encoding (400), obsolete line folding (400), a declared body over
// the limit (413).
HeadVerdict check_head(std::string_view head, const HeadLimits& limits);

// Judge a parsed head: origin-form target without dot segments, no CONNECT
// or TRACE, exactly one Host (HTTP/1.1), a Transfer-Encoding only in HTTP/1.1
// and only "chunked".
HeadVerdict check_parsed_head(const relay::RequestHead& head);

// Whether the path of `target` (before any `?` or `#`) has a `.` or `..`
// segment as some server may read it: dots literal or `%2e` (any case),
// segments split at `/`, `\`, `%2f` and `%5c`, a segment's `;` parameters
// ignored (`..;`). Forwarded, such a path could leave the pool's base path.
bool has_dot_segment(std::string_view target);

// The error response keyshim writes itself for a refused head.
std::string error_response(int status, std::string_view message);

} // namespace keyshim::server
