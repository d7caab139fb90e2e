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
#include "bench_text.hpp"
#include "bench_tls.hpp"
#include "mock_ws.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <vector>

namespace {

constexpr size_t k_max_head = 64 * 1024;
constexpr size_t k_max_buffered_input = 1024 * 1024;
constexpr size_t k_batch_bytes = 64 * 1024;
constexpr uint64_t k_max_event_size = 1024 * 1024;

const char k_json_body[] =
    R"({"id":"bench-1","object":"chat.completion","model":"bench",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]})";
const char k_429_body[] = R"j({"error":{"message":"rate limited (bench)","type":"rate_limit_error"}})j";

volatile sig_atomic_t g_stop = 0;

void on_signal(int) {
  g_stop = 1;
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

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

int g_ep = -1;
int g_timer = -1;
SSL_CTX* g_tls = nullptr;   // --tls: every connection is TLS
std::vector<Conn*> g_timed; // streams waiting for their next event time
uint64_t g_armed_for = 0;

void set_events(Conn* c, bool want_out) {
  if (c->want_out == want_out) {
    return;
  }
  c->want_out = want_out;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
}

void untime(Conn* c) {
  if (c->timed_idx < 0) {
    return;
  }
  size_t i = static_cast<size_t>(c->timed_idx);
  g_timed[i] = g_timed.back();
  g_timed[i]->timed_idx = static_cast<long>(i);
  g_timed.pop_back();
  c->timed_idx = -1;
}

void time_wait(Conn* c) {
  if (c->timed_idx >= 0) {
    return;
  }
  c->timed_idx = static_cast<long>(g_timed.size());
  g_timed.push_back(c);
}

void close_conn(Conn* c) {
  untime(c);
  epoll_ctl(g_ep, EPOLL_CTL_DEL, c->fd, nullptr);
  SSL_free(c->ssl);
  close(c->fd);
  delete c;
}

ssize_t conn_recv(Conn* c, char* buf, size_t n) {
  return c->ssl ? bench_tls_recv(c->ssl, buf, n) : recv(c->fd, buf, n, 0);
}

ssize_t conn_send(Conn* c, const char* p, size_t n) {
  return c->ssl ? bench_tls_send(c->ssl, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);
}

// Parses "name=value" from a query string; 0 when absent or not a number.
uint64_t query_u64(const char* q, size_t qlen, const char* name) {
  size_t nlen = strlen(name);
  size_t i = 0;
  while (i < qlen) {
    size_t end = i;
    while (end < qlen && q[end] != '&') {
      end++;
    }
    if (end - i > nlen && memcmp(q + i, name, nlen) == 0 && q[i + nlen] == '=') {
      uint64_t v = 0;
      for (size_t j = i + nlen + 1; j < end && q[j] >= '0' && q[j] <= '9'; j++) {
        v = v * 10 + static_cast<uint64_t>(q[j] - '0');
        if (v > 1000000000000ull) {
          break;
        }
      }
      return v;
    }
    i = end + 1;
  }
  return 0;
}

// Value of a header line after the colon, without surrounding blanks.
void header_value(const char* line, size_t len, size_t colon, const char** v, size_t* vlen) {
  size_t b = colon + 1;
  while (b < len && (line[b] == ' ' || line[b] == '\t')) {
    b++;
  }
  size_t e = len;
  while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) {
    e--;
  }
  *v = line + b;
  *vlen = e - b;
}

// Parses the head in c->in[0, head_len); sets the route and the body framing.
void parse_head(Conn* c, size_t head_len) {
  const char* p = c->in.data();
  const char* line_end = static_cast<const char*>(memchr(p, '\n', head_len));
  c->route = Route::bad;
  c->pending = true;
  c->body = BodyState::none;
  c->key0 = false;
  if (line_end == nullptr) {
    return;
  }
  // Request line: METHOD SP TARGET SP HTTP/1.x
  const char* sp1 = static_cast<const char*>(memchr(p, ' ', static_cast<size_t>(line_end - p)));
  if (sp1 == nullptr) {
    return;
  }
  const char* target = sp1 + 1;
  const char* sp2 = static_cast<const char*>(memchr(target, ' ', static_cast<size_t>(line_end - target)));
  if (sp2 == nullptr) {
    return;
  }
  c->head_only = (sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0);
  c->http10 = (line_end - sp2 >= 9 && memcmp(sp2 + 1, "HTTP/1.0", 8) == 0);
  c->keep_alive = !c->http10;
  size_t tlen = static_cast<size_t>(sp2 - target);
  const char* qmark = static_cast<const char*>(memchr(target, '?', tlen));
  size_t plen = qmark ? static_cast<size_t>(qmark - target) : tlen;
  const char* q = qmark ? qmark + 1 : target + tlen;
  size_t qlen = static_cast<size_t>(target + tlen - q);
  auto path_is = [&](const char* s) { return plen == strlen(s) && memcmp(target, s, plen) == 0; };
  if (path_is("/json")) {
    c->route = Route::json;
  } else if (path_is("/json-fo")) {
    c->route = Route::json_fo;
  } else if (path_is("/429")) {
    c->route = Route::too_many;
  } else if (path_is("/sse")) {
    c->route = Route::sse;
  } else if (path_is("/ts")) {
    c->route = Route::ts;
  } else if (path_is("/hold")) {
    c->route = Route::hold;
  } else {
    c->route = Route::not_found;
  }
  c->q_events = query_u64(q, qlen, "events");
  c->q_gap_us = query_u64(q, qlen, "gap_us");
  c->q_size = query_u64(q, qlen, "size");
  c->q_batch = query_u64(q, qlen, "batch");

  // Header lines.
  const char* line = line_end + 1;
  const char* end = p + head_len;
  bool chunked = false;
  bool have_length = false;
  bool expect_continue = false;
  uint64_t length = 0;
  while (line < end) {
    const char* nl = static_cast<const char*>(memchr(line, '\n', static_cast<size_t>(end - line)));
    if (nl == nullptr) {
      break;
    }
    size_t len = static_cast<size_t>(nl - line);
    if (len > 0 && line[len - 1] == '\r') {
      len--;
    }
    if (len == 0) {
      break;
    }
    const char* colon = static_cast<const char*>(memchr(line, ':', len));
    if (colon != nullptr) {
      const char* v = nullptr;
      size_t vlen = 0;
      header_value(line, len, static_cast<size_t>(colon - line), &v, &vlen);
      size_t nlen = static_cast<size_t>(colon - line);
      if (nlen == 14 && iequal_prefix(line, nlen, "content-length")) {
        have_length = true;
        length = 0;
        for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++) {
          length = length * 10 + static_cast<uint64_t>(v[i] - '0');
        }
      } else if (nlen == 17 && iequal_prefix(line, nlen, "transfer-encoding")) {
        chunked = vlen >= 7 && iequal_prefix(v + vlen - 7, 7, "chunked");
      } else if (nlen == 10 && iequal_prefix(line, nlen, "connection")) {
        if (iequal_prefix(v, vlen, "close")) {
          c->keep_alive = false;
        } else if (iequal_prefix(v, vlen, "keep-alive")) {
          c->keep_alive = true;
        }
      } else if (nlen == 13 && iequal_prefix(line, nlen, "authorization")) {
        c->key0 = (vlen == 17 && memcmp(v, "Bearer sk-bench-0", 17) == 0);
      } else if (nlen == 6 && iequal_prefix(line, nlen, "expect")) {
        expect_continue = iequal_prefix(v, vlen, "100-continue");
      }
    }
    line = nl + 1;
  }
  if (chunked) {
    c->body = BodyState::chunk_size;
  } else if (have_length && length > 0) {
    c->body = BodyState::length;
    c->body_left = length;
  }
  if (expect_continue && c->body != BodyState::none && !c->http10) {
    c->out.append("HTTP/1.1 100 Continue\r\n\r\n");
  }
}

// Drops request body bytes from the front of c->in. Returns false when the
// body is not complete yet (more input needed) or is malformed (closes).
bool skip_body(Conn* c, bool* bad) {
  size_t pos = 0;
  const size_t n = c->in.size();
  const char* p = c->in.data();
  while (c->body != BodyState::none) {
    if (c->body == BodyState::length || c->body == BodyState::chunk_data) {
      size_t take = n - pos;
      if (take > c->body_left) {
        take = static_cast<size_t>(c->body_left);
      }
      pos += take;
      c->body_left -= take;
      if (c->body_left > 0) {
        break;
      }
      c->body = c->body == BodyState::length ? BodyState::none : BodyState::chunk_crlf;
      continue;
    }
    // Line-based states: chunk size, the CRLF after a chunk, trailers.
    const char* nl = static_cast<const char*>(memchr(p + pos, '\n', n - pos));
    if (nl == nullptr) {
      if (n - pos > 4096) {
        *bad = true;
      }
      break;
    }
    size_t len = static_cast<size_t>(nl - (p + pos));
    const char* line = p + pos;
    pos += len + 1;
    if (len > 0 && line[len - 1] == '\r') {
      len--;
    }
    if (c->body == BodyState::chunk_crlf) {
      if (len != 0) {
        *bad = true;
        break;
      }
      c->body = BodyState::chunk_size;
    } else if (c->body == BodyState::chunk_size) {
      uint64_t size = 0;
      size_t i = 0;
      for (; i < len; i++) {
        char ch = line[i];
        int d = (ch >= '0' && ch <= '9')   ? ch - '0'
                : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
                : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                           : -1;
        if (d < 0 || size > (1ull << 40)) {
          break;
        }
        size = size * 16 + static_cast<uint64_t>(d);
      }
      if (i == 0) {
        *bad = true;
        break;
      }
      if (size == 0) {
        c->body = BodyState::trailer;
      } else {
        c->body = BodyState::chunk_data;
        c->body_left = size;
      }
    } else if (len == 0) { // trailer section ends with an empty line
      c->body = BodyState::none;
    }
  }
  c->in.erase(0, pos);
  return c->body == BodyState::none && !*bad;
}

void append_simple(Conn* c, int status, const char* reason, const char* extra, const char* body,
                   size_t blen) {
  char head[512];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n%s\r\n",
                   status, reason, extra, blen, c->keep_alive ? "" : "Connection: close\r\n");
  c->out.append(head, static_cast<size_t>(n));
  if (!c->head_only) {
    c->out.append(body, blen);
  }
  if (!c->keep_alive) {
    c->close_after = true;
  }
}

void append_chunk_head(Conn* c, size_t len) {
  if (c->http10) {
    return;
  }
  char h[32];
  int n = snprintf(h, sizeof h, "%zx\r\n", len);
  c->out.append(h, static_cast<size_t>(n));
}

void append_chunk_tail(Conn* c) {
  if (!c->http10) {
    c->out.append("\r\n", 2);
  }
}

// Appends one /ts event: its payload is the send time, padded to ev_size.
void append_ts_event(Conn* c, uint64_t t) {
  char buf[64];
  int n = snprintf(buf, sizeof buf, "data: t=%" PRIu64, t);
  size_t len = static_cast<size_t>(n);
  size_t total = c->ev_size > len + 2 ? static_cast<size_t>(c->ev_size) : len + 2;
  append_chunk_head(c, total);
  c->out.append(buf, len);
  c->out.append(total - len - 2, ' ');
  c->out.append("\n\n", 2);
  append_chunk_tail(c);
}

void start_stream(Conn* c) {
  const char* head = c->http10
                         ? "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                           "Connection: close\r\n\r\n"
                         : "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";
  c->out.append(head);
  if (c->http10) {
    c->close_after = true;
  }
  if (c->head_only) {
    return;
  }
  c->stream = c->route == Route::sse ? Stream::sse : c->route == Route::ts ? Stream::ts : Stream::hold;
  c->ev_left = c->stream == Stream::hold ? 1 : c->q_events;
  c->gap_ns = c->stream == Stream::hold ? 0 : c->q_gap_us * 1000;
  uint64_t size = c->q_size;
  if (size == 0) {
    size = c->stream == Stream::sse ? 256 : 64;
  }
  if (size < 8) {
    size = 8;
  }
  if (size > k_max_event_size) {
    size = k_max_event_size;
  }
  c->ev_size = size;
  c->ev_batch = c->q_batch;
  c->next_due = now_ns();
  if (c->stream != Stream::ts) {
    c->event.assign("data: ");
    c->event.append(static_cast<size_t>(size) - 8, c->stream == Stream::hold ? 'h' : 'x');
    c->event.append("\n\n");
  }
}

// Answers the request whose head and body have been read.
void answer(Conn* c) {
  c->pending = false;
  switch (c->route) {
  case Route::json:
    append_simple(c, 200, "OK", "", k_json_body, sizeof k_json_body - 1);
    break;
  case Route::json_fo:
    if (c->key0) {
      append_simple(c, 429, "Too Many Requests", "Retry-After: 30\r\n", k_429_body, sizeof k_429_body - 1);
    } else {
      append_simple(c, 200, "OK", "", k_json_body, sizeof k_json_body - 1);
    }
    break;
  case Route::too_many:
    append_simple(c, 429, "Too Many Requests", "Retry-After: 30\r\n", k_429_body, sizeof k_429_body - 1);
    break;
  case Route::sse:
  case Route::ts:
  case Route::hold:
    start_stream(c);
    break;
  case Route::not_found:
    append_simple(c, 404, "Not Found", "", "{}", 2);
    break;
  case Route::bad:
    c->keep_alive = false;
    append_simple(c, 400, "Bad Request", "", "{}", 2);
    break;
  }
}

// Parses and answers buffered requests until one needs more input or a
// stream starts. Returns true when something was queued for output.
bool serve_requests(Conn* c) {
  bool queued = false;
  while (c->stream == Stream::none && !c->close_after) {
    if (c->pending) {
      bool bad = false;
      if (!skip_body(c, &bad)) {
        if (bad) {
          c->keep_alive = false;
          c->route = Route::bad;
          answer(c);
          return true;
        }
        return queued || c->out_off < c->out.size(); // e.g. a 100 Continue
      }
      answer(c);
      queued = true;
      continue;
    }
    size_t found = c->in.find("\r\n\r\n");
    if (found == std::string::npos) {
      if (c->in.size() > k_max_head) {
        c->keep_alive = false;
        append_simple(c, 431, "Request Header Fields Too Large", "", "{}", 2);
        return true;
      }
      return queued;
    }
    parse_head(c, found + 4);
    c->in.erase(0, found + 4);
  }
  return queued;
}

// Sends what is queued. Returns 1 when all is out, 0 when the socket is
// full (EPOLLOUT will resume), -1 when the connection failed.
int flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t n = conn_send(c, c->out.data() + c->out_off, c->out.size() - c->out_off);
    if (n > 0) {
      c->out_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;
    }
    return -1;
  }
  c->out.clear();
  c->out_off = 0;
  return 1;
}

// Produces the next piece of the stream into c->out. Returns false when the
// stream must wait for its timer.
bool produce(Conn* c) {
  if (c->ev_left == 0) {
    if (c->stream == Stream::hold) {
      return false; // held until the client closes
    }
    if (!c->http10) {
      c->out.append("0\r\n\r\n", 5);
    }
    c->stream = Stream::none;
    if (!c->keep_alive) {
      c->close_after = true;
    }
    return true;
  }
  uint64_t now = 0;
  if (c->gap_ns > 0) {
    now = now_ns();
    if (now < c->next_due) {
      time_wait(c);
      return false;
    }
  }
  if (c->stream == Stream::ts) {
    append_ts_event(c, now != 0 ? now : now_ns());
    c->ev_left--;
  } else {
    // One event when paced; as many as fit a batch when not.
    uint64_t k = 1;
    if (c->gap_ns == 0) {
      k = c->ev_batch > 0 ? c->ev_batch : k_batch_bytes / c->ev_size;
      if (k == 0) {
        k = 1;
      }
      if (k > c->ev_left) {
        k = c->ev_left;
      }
    }
    append_chunk_head(c, static_cast<size_t>(k * c->ev_size));
    for (uint64_t i = 0; i < k; i++) {
      c->out.append(c->event);
    }
    append_chunk_tail(c);
    c->ev_left -= k;
  }
  if (c->gap_ns > 0) {
    c->next_due += c->gap_ns;
  }
  return true;
}

// Moves a connection forward as far as it can go without blocking.
// Returns false when the connection was closed.
bool pump(Conn* c) {
  for (int rounds = 0; rounds < 64; rounds++) {
    int f = flush(c);
    if (f < 0) {
      close_conn(c);
      return false;
    }
    if (f == 0) {
      set_events(c, true);
      return true;
    }
    set_events(c, false);
    if (c->stream != Stream::none) {
      if (!produce(c)) {
        return true;
      }
      continue;
    }
    if (c->close_after) {
      close_conn(c);
      return false;
    }
    if (!serve_requests(c)) {
      return true;
    }
  }
  // A fast reader of a bulk stream: yield to the other connections and come
  // back through EPOLLOUT.
  set_events(c, true);
  return true;
}

bool on_readable(Conn* c) {
  static char buf[64 * 1024];
  const int reads = c->ssl ? 64 : 16; // TLS: a record (<= 16 KiB) per read
  for (int i = 0; i < reads; i++) {
    ssize_t n = conn_recv(c, buf, sizeof buf);
    if (n > 0) {
      c->in.append(buf, static_cast<size_t>(n));
      if (c->in.size() > k_max_buffered_input && (c->stream != Stream::none || !c->pending)) {
        close_conn(c);
        return false;
      }
      if (c->stream == Stream::none && c->pending && c->body != BodyState::none) {
        bool bad = false;
        if (skip_body(c, &bad) || bad) {
          break; // the answer goes out in pump
        }
      }
      if (static_cast<size_t>(n) < sizeof buf && c->ssl == nullptr) {
        break; // drained; level-triggered epoll reports anything newer
      }
      // TLS returns one record per read: read on until EAGAIN.
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    close_conn(c); // EOF or error: a held stream ends here
    return false;
  }
  return pump(c);
}

void arm_timer() {
  uint64_t earliest = UINT64_MAX;
  for (Conn* c : g_timed) {
    if (c->next_due < earliest) {
      earliest = c->next_due;
    }
  }
  if (earliest == g_armed_for) {
    return;
  }
  g_armed_for = earliest;
  itimerspec its{};
  if (earliest != UINT64_MAX) {
    its.it_value.tv_sec = static_cast<time_t>(earliest / 1000000000ull);
    its.it_value.tv_nsec = static_cast<long>(earliest % 1000000000ull);
  }
  timerfd_settime(g_timer, TFD_TIMER_ABSTIME, &its, nullptr);
}

void run_timers() {
  uint64_t now = now_ns();
  for (size_t i = 0; i < g_timed.size();) {
    Conn* c = g_timed[i];
    if (c->next_due <= now) {
      untime(c); // g_timed[i] now holds another connection
      pump(c);
      continue;
    }
    i++;
  }
}

void accept_all(int lfd, int* reserve_fd) {
  for (int i = 0; i < 256; i++) {
    int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: shed one connection rather than spin on a
        // listening socket that stays readable.
        if (*reserve_fd >= 0) {
          close(*reserve_fd);
          int drop = accept(lfd, nullptr, nullptr);
          if (drop >= 0) {
            close(drop);
          }
          *reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        fprintf(stderr, "mock_upstream: out of file descriptors, dropped a connection\n");
      }
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Conn* c = new Conn;
    c->fd = fd;
    if (g_tls != nullptr) {
      c->ssl = SSL_new(g_tls);
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl); // the first reads run the handshake
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c;
    epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev);
  }
}

} // namespace

int main(int argc, char** argv) {
  int port = 0;
  long max_seconds = 3600;
  bool ws = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      port = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
      max_seconds = atol(argv[++i]);
    } else if (strcmp(argv[i], "--tls") == 0 && i + 2 < argc) {
      g_tls = bench_tls_server(argv[i + 1], argv[i + 2]);
      if (g_tls == nullptr) {
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
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 65535) != 0) {
    fprintf(stderr, "mock_upstream: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return 1;
  }
  socklen_t alen = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen);
  printf("port=%d\n", ntohs(addr.sin_port));
  fflush(stdout);

  g_ep = epoll_create1(EPOLL_CLOEXEC);
  g_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &lfd;
  epoll_ctl(g_ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.ptr = &g_timer;
  epoll_ctl(g_ep, EPOLL_CTL_ADD, g_timer, &ev);

  const uint64_t deadline = now_ns() + static_cast<uint64_t>(max_seconds) * 1000000000ull;
  epoll_event events[512];
  while (!g_stop && now_ns() < deadline) {
    int n = epoll_wait(g_ep, events, 512, 1000);
    for (int i = 0; i < n; i++) {
      void* ptr = events[i].data.ptr;
      if (ptr == &lfd) {
        accept_all(lfd, &reserve_fd);
      } else if (ptr == &g_timer) {
        uint64_t expirations = 0;
        ssize_t r = read(g_timer, &expirations, sizeof expirations);
        (void)r;
        g_armed_for = 0;
      } else {
        Conn* c = static_cast<Conn*>(ptr);
        uint32_t e = events[i].events;
        if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
          on_readable(c); // reads to EOF and closes, or moves on
        } else if (e & EPOLLOUT) {
          pump(c);
        }
      }
    }
    run_timers();
    arm_timer();
  }
  return 0;
}
