#pragma once
// The values the policy layer reads and returns, in one header with no
// behaviour, so that each policy module includes what it reads, not another
// module: an upstream attempt's outcome (as the relay saw it) and a
// response's token usage.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::policy {

// Cooldowns, waits and hints: whole milliseconds.
using std::chrono::milliseconds;

enum class TransportFailure {
  none,                   // an HTTP response arrived
  connect,                // refused, unreachable, connect timeout
  tls,                    // handshake or certificate failure
  closed_before_response, // reset/close before a complete status line and headers
  first_byte_timeout,     // headers or first body bytes did not arrive in time
};

struct Header {
  std::string name; // as received; compare case-insensitively
  std::string value;
};

struct Outcome {
  TransportFailure transport = TransportFailure::none;
  int status = 0;
  std::vector<Header> headers;
  // For an error status: the buffered body. For a 2xx event stream: the bytes
  // received up to and including the first complete event. Otherwise empty.
  std::string body;
  bool event_stream = false; // Content-Type is text/event-stream
};

// Token counts of one response; nullopt when the response did not tell.
struct Usage {
  std::optional<std::uint64_t> input;
  std::optional<std::uint64_t> output;

  bool operator==(const Usage&) const = default;
};

} // namespace keyshim::policy
