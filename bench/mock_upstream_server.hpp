#pragma once
// The HTTP mode of the benchmark's mock upstream (bench_mock_upstream
// without --ws): a single-threaded epoll HTTP/1.1 server, plain or TLS.
#include "bench_tls.hpp"

namespace mock {

// Ignores SIGPIPE, ends on SIGTERM/SIGINT; listens on 127.0.0.1:port (0: any
// free port), prints "port=N", and serves the routes listed at the top of
// mock_upstream.cpp until a signal or max_seconds. With tls (not null) every
// connection is TLS. Returns the exit code (1: cannot listen).
int run_http(int port, long max_seconds, SSL_CTX* tls);

} // namespace mock
