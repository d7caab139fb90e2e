#pragma once
// How the mock upstream reads a request (internal to bench_mock_upstream):
// the head (request line, route, query numbers, the headers it heeds) and
// the body, which it skips. For mock_upstream_server.cpp, with internal
// linkage (see mock_upstream_conn.hpp): this runs for every request.
#include "bench_text.hpp"
#include "mock_upstream_conn.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mock {

namespace {

// Parses "name=value" from a query string; 0 when absent or not a number.
inline uint64_t query_u64(const char* q, size_t qlen, const char* name) {
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
inline void header_value(const char* line, size_t len, size_t colon, const char** v, size_t* vlen) {
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

// The route a request path (without its query) names.
inline Route route_of(const char* path, size_t plen) {
  auto path_is = [&](const char* s) { return plen == strlen(s) && memcmp(path, s, plen) == 0; };
  if (path_is("/json")) {
    return Route::json;
  }
  if (path_is("/json-fo")) {
    return Route::json_fo;
  }
  if (path_is("/429")) {
    return Route::too_many;
  }
  if (path_is("/sse")) {
    return Route::sse;
  }
  if (path_is("/ts")) {
    return Route::ts;
  }
  if (path_is("/hold")) {
    return Route::hold;
  }
  return Route::not_found;
}

// The request line [p, line_end): METHOD SP TARGET SP HTTP/1.x. Sets the
// method's and version's flags, the route and the query's numbers; false
// when it is malformed (the route stays bad).
inline bool parse_request_line(Conn* c, const char* p, const char* line_end) {
  const char* sp1 = static_cast<const char*>(memchr(p, ' ', static_cast<size_t>(line_end - p)));
  if (sp1 == nullptr) {
    return false;
  }
  const char* target = sp1 + 1;
  const char* sp2 = static_cast<const char*>(memchr(target, ' ', static_cast<size_t>(line_end - target)));
  if (sp2 == nullptr) {
    return false;
  }
  c->head_only = (sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0);
  c->http10 = (line_end - sp2 >= 9 && memcmp(sp2 + 1, "HTTP/1.0", 8) == 0);
  c->keep_alive = !c->http10;
  size_t tlen = static_cast<size_t>(sp2 - target);
  const char* qmark = static_cast<const char*>(memchr(target, '?', tlen));
  size_t plen = qmark ? static_cast<size_t>(qmark - target) : tlen;
  const char* q = qmark ? qmark + 1 : target + tlen;
  size_t qlen = static_cast<size_t>(target + tlen - q);
  c->route = route_of(target, plen);
  c->q_events = query_u64(q, qlen, "events");
  c->q_gap_us = query_u64(q, qlen, "gap_us");
  c->q_size = query_u64(q, qlen, "size");
  c->q_batch = query_u64(q, qlen, "batch");
  return true;
}

// What the headers say about the request body.
struct BodyFraming {
  bool chunked = false;
  bool have_length = false;
  bool expect_continue = false;
  uint64_t length = 0;
};

// One header line (without its line end) with its colon at `colon`: the
// body's framing into *f; Connection and Authorization into c.
inline void take_header(Conn* c, const char* line, size_t len, size_t colon, BodyFraming* f) {
  const char* v = nullptr;
  size_t vlen = 0;
  header_value(line, len, colon, &v, &vlen);
  size_t nlen = colon;
  if (nlen == 14 && iequal_prefix(line, nlen, "content-length")) {
    f->have_length = true;
    f->length = 0;
    for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++) {
      f->length = f->length * 10 + static_cast<uint64_t>(v[i] - '0');
    }
  } else if (nlen == 17 && iequal_prefix(line, nlen, "transfer-encoding")) {
    f->chunked = vlen >= 7 && iequal_prefix(v + vlen - 7, 7, "chunked");
  } else if (nlen == 10 && iequal_prefix(line, nlen, "connection")) {
    if (iequal_prefix(v, vlen, "close")) {
      c->keep_alive = false;
    } else if (iequal_prefix(v, vlen, "keep-alive")) {
      c->keep_alive = true;
    }
  } else if (nlen == 13 && iequal_prefix(line, nlen, "authorization")) {
    c->key0 = (vlen == 17 && memcmp(v, "Bearer sk-bench-0", 17) == 0);
  } else if (nlen == 6 && iequal_prefix(line, nlen, "expect")) {
    f->expect_continue = iequal_prefix(v, vlen, "100-continue");
  }
}

// The header lines in [line, end), up to the empty line that ends them.
inline void take_headers(Conn* c, const char* line, const char* end, BodyFraming* f) {
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
      take_header(c, line, len, static_cast<size_t>(colon - line), f);
    }
    line = nl + 1;
  }
}

// Parses the head in c->in[0, head_len); sets the route and the body framing.
inline void parse_head(Conn* c, size_t head_len) {
  const char* p = c->in.data();
  const char* line_end = static_cast<const char*>(memchr(p, '\n', head_len));
  c->route = Route::bad;
  c->pending = true;
  c->body = BodyState::none;
  c->key0 = false;
  if (line_end == nullptr || !parse_request_line(c, p, line_end)) {
    return;
  }
  BodyFraming f;
  take_headers(c, line_end + 1, p + head_len, &f);
  if (f.chunked) {
    c->body = BodyState::chunk_size;
  } else if (f.have_length && f.length > 0) {
    c->body = BodyState::length;
    c->body_left = f.length;
  }
  if (f.expect_continue && c->body != BodyState::none && !c->http10) {
    c->out.append("HTTP/1.1 100 Continue\r\n\r\n");
  }
}

// The hex size at the start of a chunk-size line into *size; returns how
// many digits there were (0: not a chunk size). Stops past 2^40.
inline size_t chunk_size_of(const char* line, size_t len, uint64_t* size) {
  size_t i = 0;
  for (; i < len; i++) {
    char ch = line[i];
    int d = (ch >= '0' && ch <= '9')   ? ch - '0'
            : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
            : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                       : -1;
    if (d < 0 || *size > (1ull << 40)) {
      break;
    }
    *size = *size * 16 + static_cast<uint64_t>(d);
  }
  return i;
}

// One line of a chunked body, without its line end: a chunk size, the empty
// line after a chunk's data, or a trailer line. False when malformed.
inline bool skip_body_line(Conn* c, const char* line, size_t len) {
  if (c->body == BodyState::chunk_crlf) {
    if (len != 0) {
      return false;
    }
    c->body = BodyState::chunk_size;
  } else if (c->body == BodyState::chunk_size) {
    uint64_t size = 0;
    if (chunk_size_of(line, len, &size) == 0) {
      return false;
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
  return true;
}

// Drops request body bytes from the front of c->in. Returns false when the
// body is not complete yet (more input needed) or is malformed (*bad).
inline bool skip_body(Conn* c, bool* bad) {
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
    if (!skip_body_line(c, line, len)) {
      *bad = true;
      break;
    }
  }
  c->in.erase(0, pos);
  return c->body == BodyState::none && !*bad;
}

} // namespace

} // namespace mock
