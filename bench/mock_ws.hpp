#pragma once
// The WebSocket mode of the benchmark's mock upstream (bench_mock_upstream
// --ws): an echo server on Boost.Beast, one thread.

// Listens on 127.0.0.1:port (0: any free port), prints "port=N", and echoes
// every message back with its type (text or binary) until SIGTERM/SIGINT or
// max_seconds. A request without `Upgrade: websocket` gets 426. Returns the
// exit code.
int run_ws_echo(int port, long max_seconds);
