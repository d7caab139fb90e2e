// The soak run: phases (warm-up, quiet measurement, load, quiet measurement),
// the reloader, and the summary. See soak_client.cpp for the command line.
#pragma once

#include <cstdint>
#include <string>

namespace soak {

struct RunOptions {
  int port = 0;          // keyshim's
  int pid = 0;           // keyshim's
  int upstream_port = 0; // bench_soak_upstream's
  std::string pool_file;
  int load_seconds = 600;
  int warmup_seconds = 20;
  int concurrency = 32;
  std::uint64_t seed = 1;
  int reload_seconds = 15;
  long long rss_tolerance_kib = 4096;
  int pace_ms = 100;  // each client pauses up to this long between streams
  int ws_clients = 4; // of `concurrency`, the clients that open WebSockets
};

// The whole run; returns the process exit code (0: no violation, no leak).
int run_soak(const RunOptions& opt);

} // namespace soak
