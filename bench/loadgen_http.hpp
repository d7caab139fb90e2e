#pragma once
// The load driver's HTTP/1.1 response reader: an incremental parser fed the
// bytes of each read, head first, then a body framed by Content-Length,
// chunked encoding or the end of the connection. On every response's path:
// all of it is inline, in the engine's translation unit, as it was when the
// load driver was one file; it allocates only when a head or a line grows
// its buffer.
#include "bench_text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace loadgen {

// Internal linkage, as in the one-file load driver (see loadgen_engine.hpp).
namespace {

constexpr size_t k_max_head = 64 * 1024;

struct Resp {
  enum class St { head, length, chunk_size, chunk_data, chunk_crlf, trailer, to_eof, done };
  St st = St::head;
  std::string buf; // the head, then the current chunk-size or trailer line
  int status = 0;
  uint64_t left = 0;
  bool close = false;
  bool bad = false;

  void reset() {
    st = St::head;
    buf.clear();
    status = 0;
    left = 0;
    close = false;
    bad = false;
  }
};

// Parses the complete head in r.buf: the status, the body's framing, and
// whether the server closes after it. Leaves r ready for the body (or for
// the real answer after a 1xx).
inline void parse_head(Resp& r) {
  const std::string& h = r.buf;
  if (h.size() < 12 || h.compare(0, 5, "HTTP/") != 0) {
    r.bad = true;
    r.st = Resp::St::done;
    return;
  }
  r.status = atoi(h.c_str() + 9);
  bool chunked = false;
  bool have_length = false;
  uint64_t length = 0;
  size_t pos = h.find('\n');
  while (pos != std::string::npos && pos + 1 < h.size()) {
    size_t start = pos + 1;
    size_t end = h.find('\n', start);
    if (end == std::string::npos) {
      break;
    }
    const char* line = h.data() + start;
    size_t len = end - start;
    if (len > 0 && line[len - 1] == '\r') {
      len--;
    }
    const char* colon = static_cast<const char*>(memchr(line, ':', len));
    if (colon != nullptr) {
      size_t nlen = static_cast<size_t>(colon - line);
      const char* v = colon + 1;
      while (v < line + len && (*v == ' ' || *v == '\t')) {
        v++;
      }
      size_t vlen = static_cast<size_t>(line + len - v);
      if (nlen == 14 && iequal_prefix(line, nlen, "content-length")) {
        have_length = true;
        length = strtoull(v, nullptr, 10);
      } else if (nlen == 17 && iequal_prefix(line, nlen, "transfer-encoding")) {
        chunked = vlen >= 7 && iequal_prefix(v + vlen - 7, 7, "chunked");
      } else if (nlen == 10 && iequal_prefix(line, nlen, "connection")) {
        r.close = iequal_prefix(v, vlen, "close");
      }
    }
    pos = end;
  }
  r.buf.clear();
  if (r.status >= 100 && r.status < 200) {
    r.reset(); // an interim answer; the real one follows
  } else if (chunked) {
    r.st = Resp::St::chunk_size;
  } else if (have_length) {
    r.left = length;
    r.st = length > 0 ? Resp::St::length : Resp::St::done;
  } else if (r.status == 204 || r.status == 304) {
    r.st = Resp::St::done;
  } else {
    r.st = Resp::St::to_eof;
    r.close = true;
  }
}

// Takes one line into r.buf; returns true once it is complete (without the
// newline), with *i past it.
inline bool take_line(Resp& r, const char* p, size_t n, size_t* i) {
  const char* nl = static_cast<const char*>(memchr(p + *i, '\n', n - *i));
  size_t end = nl ? static_cast<size_t>(nl - p) : n;
  r.buf.append(p + *i, end - *i);
  *i = nl ? end + 1 : n;
  if (r.buf.size() > 4096) {
    r.bad = true;
    r.st = Resp::St::done;
    return false;
  }
  if (nl == nullptr) {
    return false;
  }
  if (!r.buf.empty() && r.buf.back() == '\r') {
    r.buf.pop_back();
  }
  return true;
}

// The head state: gathers bytes from p[*i, n) until the blank line that ends
// the head, then parses it; *i ends past the head, or at n while it lasts.
inline void feed_head(Resp& r, const char* p, size_t n, size_t* i) {
  size_t old = r.buf.size();
  size_t from = old >= 3 ? old - 3 : 0;
  r.buf.append(p + *i, n - *i);
  size_t at = r.buf.find("\r\n\r\n", from);
  if (at == std::string::npos) {
    *i = n;
    if (r.buf.size() > k_max_head) {
      r.bad = true;
      r.st = Resp::St::done;
    }
    return;
  }
  r.buf.resize(at + 4);
  *i += at + 4 - old;
  parse_head(r);
}

// The chunk-size state: once its line is complete, the size of the next
// chunk (0: the trailer follows).
inline void feed_chunk_size(Resp& r, const char* p, size_t n, size_t* i) {
  if (!take_line(r, p, n, i)) {
    return;
  }
  char* end = nullptr;
  unsigned long long size = strtoull(r.buf.c_str(), &end, 16);
  if (end == r.buf.c_str()) {
    r.bad = true;
    r.st = Resp::St::done;
    return;
  }
  r.buf.clear();
  r.left = size;
  r.st = size == 0 ? Resp::St::trailer : Resp::St::chunk_data;
}

// Feeds received bytes; body bytes go to on_body. Returns how many bytes
// were used: fewer than n only when the response completed.
template <class F> size_t feed(Resp& r, const char* p, size_t n, F&& on_body) {
  size_t i = 0;
  while (i < n && r.st != Resp::St::done) {
    switch (r.st) {
    case Resp::St::head:
      feed_head(r, p, n, &i);
      break;
    case Resp::St::length:
    case Resp::St::chunk_data: {
      size_t take = n - i;
      if (take > r.left) {
        take = static_cast<size_t>(r.left);
      }
      on_body(p + i, take);
      i += take;
      r.left -= take;
      if (r.left == 0) {
        r.st = r.st == Resp::St::length ? Resp::St::done : Resp::St::chunk_crlf;
      }
      break;
    }
    case Resp::St::chunk_size:
      feed_chunk_size(r, p, n, &i);
      break;
    case Resp::St::chunk_crlf:
      if (take_line(r, p, n, &i)) {
        r.bad = !r.buf.empty();
        r.st = r.bad ? Resp::St::done : Resp::St::chunk_size;
        r.buf.clear();
      }
      break;
    case Resp::St::trailer:
      if (take_line(r, p, n, &i)) {
        if (r.buf.empty()) {
          r.st = Resp::St::done;
        }
        r.buf.clear();
      }
      break;
    case Resp::St::to_eof:
      on_body(p + i, n - i);
      i = n;
      break;
    case Resp::St::done:
      break;
    }
  }
  return i;
}

} // namespace

} // namespace loadgen
