#pragma once
// The mock upstream's connections (internal to bench_mock_upstream): what
// one connection holds while it reads a request, answers it or produces a
// stream, the process-wide epoll set and stream timer, and the small I/O
// helpers every step uses. For mock_upstream_server.cpp, which serves the
// requests. The helpers here, like the functions of mock_upstream_request.hpp
// and mock_upstream_routes.hpp, have internal linkage, as they had when the
// mock was one file: GCC then inlines the request path as it did then.
#include "bench_tls.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace mock {

constexpr size_t k_max_head = 64 * 1024;
constexpr size_t k_max_buffered_input = 1024 * 1024;
constexpr size_t k_batch_bytes = 64 * 1024;
constexpr uint64_t k_max_event_size = 1024 * 1024;

enum class BodyState { none, length, chunk_size, chunk_data, chunk_crlf, trailer };
enum class Stream { none, sse, ts, hold };
enum class Route { json, json_fo, too_many, sse, ts, hold, not_found, bad };

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr; // with --tls
  std::string in;     // received, not yet parsed
  std::string out;    // to send, from out_off on
  size_t out_off = 0;
  bool want_out = false;
  bool close_after = false; // close once out is flushed
  bool http10 = false;
  bool keep_alive = true;

  // The request being read: its body is skipped before the answer goes out.
  BodyState body = BodyState::none;
  uint64_t body_left = 0;
  bool pending = false; // a head was parsed, its answer waits for the body
  Route route = Route::not_found;
  bool head_only = false;
  bool key0 = false; // Authorization is "Bearer sk-bench-0"
  uint64_t q_events = 0, q_gap_us = 0, q_size = 0, q_batch = 0;

  // The stream being produced.
  Stream stream = Stream::none;
  uint64_t ev_left = 0;
  uint64_t ev_size = 0;
  uint64_t ev_batch = 0; // events per chunk when unpaced; 0: fill a batch
  uint64_t gap_ns = 0;
  uint64_t next_due = 0;
  std::string event;   // one /sse event, built once per stream
  long timed_idx = -1; // position in g_timed, -1 when not waiting for a timer
};

// The process-wide state: one of each for the program.
inline int g_ep = -1;
inline int g_timer = -1;
inline SSL_CTX* g_tls = nullptr;   // --tls: every connection is TLS
inline std::vector<Conn*> g_timed; // streams waiting for their next event time
inline uint64_t g_armed_for = 0;

// The helpers have internal linkage (see above).
namespace {

// CLOCK_MONOTONIC in nanoseconds (the /ts events carry it).
inline uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Asks epoll for EPOLLOUT on c, or stops asking.
inline void set_events(Conn* c, bool want_out) {
  if (c->want_out == want_out) {
    return;
  }
  c->want_out = want_out;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
}

// Takes c off the list of streams waiting for the timer, if it is on it.
inline void untime(Conn* c) {
  if (c->timed_idx < 0) {
    return;
  }
  size_t i = static_cast<size_t>(c->timed_idx);
  g_timed[i] = g_timed.back();
  g_timed[i]->timed_idx = static_cast<long>(i);
  g_timed.pop_back();
  c->timed_idx = -1;
}

// Puts c on the list of streams waiting for the timer (at c->next_due).
inline void time_wait(Conn* c) {
  if (c->timed_idx >= 0) {
    return;
  }
  c->timed_idx = static_cast<long>(g_timed.size());
  g_timed.push_back(c);
}

// Closes c's socket and frees c.
inline void close_conn(Conn* c) {
  untime(c);
  epoll_ctl(g_ep, EPOLL_CTL_DEL, c->fd, nullptr);
  SSL_free(c->ssl);
  close(c->fd);
  delete c;
}

// recv() or its TLS equivalent (bench_tls.hpp).
inline ssize_t conn_recv(Conn* c, char* buf, size_t n) {
  return c->ssl ? bench_tls_recv(c->ssl, buf, n) : recv(c->fd, buf, n, 0);
}

// send() or its TLS equivalent (bench_tls.hpp).
inline ssize_t conn_send(Conn* c, const char* p, size_t n) {
  return c->ssl ? bench_tls_send(c->ssl, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);
}

} // namespace

} // namespace mock
