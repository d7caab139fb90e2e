#pragma once
// The sizes and times a client connection is held to. Plain values, apart
// from the head gate that enforces them, so that code configuring a server
// (the CLI, tests) does not compile the HTTP library to name them.
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace keyshim::server {

struct HeadLimits {
  std::size_t max_head_bytes = 64 * 1024; // whole header block
  std::size_t max_line_bytes = 8 * 1024;  // one line
  std::uint64_t max_body_bytes = 64ull * 1024 * 1024;
};

// How long a connection may take, and be idle.
struct ConnectionLimits {
  std::chrono::milliseconds head_timeout{30'000}; // the whole head, from its first byte (or from accept)
  std::chrono::milliseconds keep_alive{30'000};   // idle time between requests
  std::chrono::milliseconds body_timeout{30'000}; // longest pause while a body uploads
};

} // namespace keyshim::server
