#pragma once
// What the mock upstream answers (internal to bench_mock_upstream): the
// JSON answers of /json, /json-fo and /429, and the event streams of /sse,
// /ts and /hold, produced a piece at a time as the socket takes them. For
// mock_upstream_server.cpp alone, with internal linkage like the rest of the
// request path (see mock_upstream_conn.hpp).
#include "mock_upstream_conn.hpp"

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace mock {

namespace {

const char k_json_body[] =
    R"({"id":"bench-1","object":"chat.completion","model":"bench",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]})";
const char k_429_body[] = R"j({"error":{"message":"rate limited (bench)","type":"rate_limit_error"}})j";

// Appends a whole answer: the status line, Content-Type JSON, `extra`
// header lines, Content-Length, and the body (not for HEAD); closes after it
// when the request does not keep the connection alive.
inline void append_simple(Conn* c, int status, const char* reason, const char* extra, const char* body,
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

// Appends a chunk's size line (nothing for HTTP/1.0, whose stream ends
// with the connection).
inline void append_chunk_head(Conn* c, size_t len) {
  if (c->http10) {
    return;
  }
  char h[32];
  int n = snprintf(h, sizeof h, "%zx\r\n", len);
  c->out.append(h, static_cast<size_t>(n));
}

// Appends the line end after a chunk's data (nothing for HTTP/1.0).
inline void append_chunk_tail(Conn* c) {
  if (!c->http10) {
    c->out.append("\r\n", 2);
  }
}

// Appends one /ts event: its payload is the send time, padded to ev_size.
inline void append_ts_event(Conn* c, uint64_t t) {
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

// Appends a stream's head and sets the stream up from the route and the
// query: events left, their size, their pacing.
inline void start_stream(Conn* c) {
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
inline void answer(Conn* c) {
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

// Produces the next piece of the stream into c->out. Returns false when the
// stream must wait for its timer.
inline bool produce(Conn* c) {
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

} // namespace

} // namespace mock
