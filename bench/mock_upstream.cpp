// The upstream of the side-by-side benchmark: a single-threaded epoll
// HTTP/1.1 server with keep-alive and no library, so that what the benchmark
// measures is the proxy in front of it, not this process. Loopback only.
//
//   GET|POST /json            200, small JSON, Content-Length
//   GET|POST /json-fo         429 + Retry-After: 30 when Authorization is
//                             "Bearer sk-bench-0", else as /json (failover)
//   GET|POST /429             429, Retry-After: 30
//   GET|POST /sse?events=N&gap_us=G&size=S[&batch=B]
//                             200 text/event-stream, chunked: N events of S
//                             bytes, G µs apart (G=0: as fast as the socket
//                             takes them, for bulk throughput; then B events
//                             per chunk, default as many as fill 64 KiB)
//   GET|POST /ts?events=N&gap_us=G&size=S
//                             as /sse, each event carrying its send time:
//                             "data: t=<CLOCK_MONOTONIC ns>"
//   GET|POST /hold?size=S     one event at once, then silence until the
//                             client closes (held streams)
//
// Request bodies (Content-Length or chunked) are read and dropped before the
// answer. Writes never block: what the socket does not take waits for
// EPOLLOUT, and a stream produces its next events only once the previous
// ones are out, so a slow reader slows the stream instead of growing memory.
//
//   bench_mock_upstream [--port N] [--max-seconds S] [--tls CERT KEY | --ws]
// prints "port=N" on stdout once listening; exits on SIGTERM/SIGINT, when
// its parent dies, or after --max-seconds (default 3600). With --tls it
// serves the same over TLS only (PEM certificate chain and key); with --ws
// it is a WebSocket echo server instead (mock_ws.cpp).
//
// This file: the command line; the server is mock_upstream_server.cpp.
#include "bench_tls.hpp"
#include "mock_upstream_server.hpp"
#include "mock_ws.hpp"

#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  int port = 0;
  long max_seconds = 3600;
  bool ws = false;
  SSL_CTX* tls = nullptr;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      port = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
      max_seconds = atol(argv[++i]);
    } else if (strcmp(argv[i], "--tls") == 0 && i + 2 < argc) {
      tls = bench_tls_server(argv[i + 1], argv[i + 2]);
      if (tls == nullptr) {
        return 1;
      }
      i += 2;
    } else if (strcmp(argv[i], "--ws") == 0) {
      ws = true;
    } else {
      fprintf(stderr, "usage: %s [--port N] [--max-seconds S] [--tls CERT KEY | --ws]\n", argv[0]);
      return 2;
    }
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (ws) {
    return run_ws_echo(port, max_seconds);
  }
  return mock::run_http(port, max_seconds, tls);
}
