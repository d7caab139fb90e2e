#pragma once
// The WebSocket mode of the benchmark's load driver (bench_loadgen ws), on
// Boost.Beast in a TU of its own.
#include <cstddef>
#include <string>
#include <vector>

struct WsOptions {
  int port = 0;
  std::string path = "/ws";
  int conns = 1;         // concurrent connections
  std::size_t size = 64; // bytes per text message
  double seconds = 2;    // the measured window
  double warmup = 0.3;   // before it, not counted
  double timeout = 60;   // the whole run
  std::vector<int> pids; // the proxy, for CPU per message
};

// Opens the connections (a WebSocket handshake each), then on every one
// sends a message and awaits its echo, in a loop, until the window ends.
// Prints one key=value line: messages, msgs_per_s, rtt_p50_us, rtt_p99_us,
// cpu_us_per_msg; when a handshake is refused, handshake_failed and the
// HTTP status the server answered (handshake_status, 0 without one).
int run_ws(const WsOptions& o);
