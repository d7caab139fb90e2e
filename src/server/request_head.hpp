#pragma once
// Checks on a request's raw head (request line and headers) before httplib
// parses it. httplib 0.11.4 puts no limit on the header count or total size
// and accepts ambiguous framing; keyshim refuses both up front.
#include <cstdint>
#include <string>
#include <string_view>

namespace keyshim::server {

struct HeadLimits {
  std::size_t max_head_bytes = 64 * 1024; // whole header block
  std::size_t max_line_bytes = 8 * 1024;  // one line
  std::uint64_t max_body_bytes = 64ull * 1024 * 1024;
};

struct HeadVerdict {
  int status = 0;      // 0 = acceptable; else the status to answer before closing
  std::string message; // why, for the client
};

// Offset just past the blank line ending the head, or npos while incomplete.
std::size_t find_head_end(std::string_view buffered);

// Judge a complete head (through its blank line): line lengths (414 for the
// request line, 431 for a header), conflicting Content-Length or
// Transfer-Encoding (400), obsolete line folding (400), a declared body over
// the limit (413).
HeadVerdict check_head(std::string_view head, const HeadLimits& limits);

// The error response keyshim writes itself for a refused head.
std::string error_response(int status, std::string_view message);

} // namespace keyshim::server
