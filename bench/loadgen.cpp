// The load driver of the side-by-side benchmark: one thread, epoll, no
// library. Each mode runs one measurement against 127.0.0.1:PORT and prints
// one line of key=value pairs; every mode is bounded by --timeout seconds.
//
//   freeport                       a free loopback port (for the proxies)
//   wait     --port P              until P accepts a connection
//   procinfo --pids A[,B]          rss_kb hwm_kb threads fds cpu_s, summed
//   rps      --port P --path /json --conc C --seconds S [--warmup S]
//            [--method GET|POST] [--body BYTES] [--pids A,B]
//            closed loop, keep-alive: req/s, latency, CPU µs per request
//   seq      --port P --path /json --count N [--warmup N]
//            one keep-alive connection, one request at a time: TTFB, latency
//   events   --port P --streams K --events N --gap-us G [--size S]
//            /ts streams: receive time minus the upstream's send time
//   held     --port P --streams N [--hold-ms MS] [--pids A,B]
//            N concurrent /hold streams: time until each had its first byte
//   silent   --port P --silent N --path /json [--baseline N]
//            one request on a fresh connection, without and with N idle ones
//   bulk     --port P --streams K --size S --seconds S [--warmup S] [--pids]
//            [--batch B]   /sse?gap_us=0 streams (B events per chunk):
//            body bytes per second, CPU s per GB
//   first    --port P --path /json -- COMMAND ARGS...
//            starts COMMAND, then asks P until one request is answered:
//            the time from the start to that answer; stops COMMAND
//   ws       --port P --path /ws --conc C --size S --seconds S [--warmup S]
//            [--pids A,B]   C WebSocket connections, each sending an S-byte
//            text message and awaiting its echo, in a loop (loadgen_ws.cpp)
//
// Every HTTP mode takes --tls-ca FILE (TLS to P, trusting FILE, name
// "localhost") and --close 1 (each request asks `Connection: close`).
#include "bench_proc.hpp"
#include "bench_text.hpp"
#include "bench_tls.hpp"
#include "loadgen_ws.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr uint64_t k_ms = 1000000ull;
constexpr uint64_t k_s = 1000000000ull;
constexpr size_t k_max_head = 64 * 1024;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * k_s + static_cast<uint64_t>(ts.tv_nsec);
}

double secs(uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

// ---------------------------------------------------------------- options

struct Options {
  std::string mode;
  int port = 0;
  std::string path = "/json";
  std::string method = "GET";
  size_t body = 0;
  int conc = 16;
  double seconds = 5;
  double warmup = 0.5;
  long count = 1000;
  long warmup_count = 50;
  int streams = 4;
  long events = 500;
  long gap_us = 2000;
  long size = 0;
  long hold_ms = 500;
  int silent = 600;
  int baseline = 20;
  double timeout = 60;
  std::vector<int> pids;
  long batch = 0;
  bool close = false;
  std::string tls_ca;
  std::vector<std::string> command; // first: what follows "--"
};

SSL_CTX* g_client_tls = nullptr; // --tls-ca: every connection is TLS

bool parse_options(int argc, char** argv, Options* o) {
  if (argc < 2) {
    return false;
  }
  o->mode = argv[1];
  for (int i = 2; i < argc; i++) {
    std::string k = argv[i];
    if (k == "--") {
      o->command.assign(argv + i + 1, argv + argc);
      return !o->command.empty();
    }
    if (i + 1 >= argc) {
      return false;
    }
    const char* v = argv[++i];
    if (k == "--port") {
      o->port = atoi(v);
    } else if (k == "--path") {
      o->path = v;
    } else if (k == "--method") {
      o->method = v;
    } else if (k == "--body") {
      o->body = static_cast<size_t>(atol(v));
    } else if (k == "--conc") {
      o->conc = atoi(v);
    } else if (k == "--seconds") {
      o->seconds = atof(v);
    } else if (k == "--warmup") {
      o->warmup = atof(v);
    } else if (k == "--count") {
      o->count = atol(v);
    } else if (k == "--warmup-count") {
      o->warmup_count = atol(v);
    } else if (k == "--streams") {
      o->streams = atoi(v);
    } else if (k == "--events") {
      o->events = atol(v);
    } else if (k == "--gap-us") {
      o->gap_us = atol(v);
    } else if (k == "--size") {
      o->size = atol(v);
    } else if (k == "--hold-ms") {
      o->hold_ms = atol(v);
    } else if (k == "--silent") {
      o->silent = atoi(v);
    } else if (k == "--baseline") {
      o->baseline = atoi(v);
    } else if (k == "--batch") {
      o->batch = atol(v);
    } else if (k == "--close") {
      o->close = atoi(v) != 0;
    } else if (k == "--tls-ca") {
      o->tls_ca = v;
    } else if (k == "--timeout") {
      o->timeout = atof(v);
    } else if (k == "--pids") {
      for (const char* p = v; *p != '\0';) {
        int pid = atoi(p);
        if (pid > 0) {
          o->pids.push_back(pid);
        }
        const char* comma = strchr(p, ',');
        if (comma == nullptr) {
          break;
        }
        p = comma + 1;
      }
    } else {
      fprintf(stderr, "loadgen: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

// ------------------------------------------------------- response parsing

// An incremental HTTP/1.1 response parser: head, then a body framed by
// Content-Length, chunked encoding or the end of the connection.
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

void parse_head(Resp& r) {
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
bool take_line(Resp& r, const char* p, size_t n, size_t* i) {
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

// Feeds received bytes; body bytes go to on_body. Returns how many bytes
// were used: fewer than n only when the response completed.
template <class F> size_t feed(Resp& r, const char* p, size_t n, F&& on_body) {
  size_t i = 0;
  while (i < n && r.st != Resp::St::done) {
    switch (r.st) {
    case Resp::St::head: {
      size_t old = r.buf.size();
      size_t from = old >= 3 ? old - 3 : 0;
      r.buf.append(p + i, n - i);
      size_t at = r.buf.find("\r\n\r\n", from);
      if (at == std::string::npos) {
        i = n;
        if (r.buf.size() > k_max_head) {
          r.bad = true;
          r.st = Resp::St::done;
        }
        break;
      }
      r.buf.resize(at + 4);
      i += at + 4 - old;
      parse_head(r);
      break;
    }
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
      if (take_line(r, p, n, &i)) {
        char* end = nullptr;
        unsigned long long size = strtoull(r.buf.c_str(), &end, 16);
        if (end == r.buf.c_str()) {
          r.bad = true;
          r.st = Resp::St::done;
          break;
        }
        r.buf.clear();
        r.left = size;
        r.st = size == 0 ? Resp::St::trailer : Resp::St::chunk_data;
      }
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

// ---------------------------------------------------------------- engine

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr; // with --tls-ca
  bool connecting = false;
  bool handshaking = false; // TLS, after the TCP connect
  bool want_out = false;
  std::string req;
  size_t req_off = 0;
  bool in_request = false;
  Resp resp;
  uint64_t t_open = 0;
  uint64_t t_sent = 0;
  uint64_t t_first = 0;
  bool got_first = false;
  bool got_event = false;
  long events_seen = 0;
  std::string line;
};

// What a mode does when things happen on its connections.
class Driver {
public:
  virtual ~Driver() = default;
  virtual void on_connected(size_t i) = 0;
  virtual void on_first_byte(size_t, uint64_t) {}
  virtual void on_body(size_t, const char*, size_t, uint64_t) {}
  virtual void on_response(size_t i, uint64_t now) = 0;
  virtual void on_closed(size_t i, uint64_t now, bool error) = 0;
  virtual bool finished(uint64_t now) = 0;
  virtual void tick(uint64_t) {}
  // True while the driver has work of its own to do between events.
  virtual bool busy() const { return false; }
};

class Engine {
public:
  Engine(int port, size_t n) : m_port(port), m_tls(g_client_tls), m_conns(n) {
    m_ep = epoll_create1(EPOLL_CLOEXEC);
  }
  ~Engine() {
    for (size_t i = 0; i < m_conns.size(); i++) {
      close_conn(i);
    }
    close(m_ep);
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Conn& conn(size_t i) { return m_conns[i]; }
  size_t size() const { return m_conns.size(); }
  size_t open_count() const { return m_open; }
  long connect_failures() const { return m_connect_failures; }

  // Starts a non-blocking connect; the driver hears on_connected or on_closed
  // (from the event loop, never from inside this call).
  void open_conn(size_t i) {
    Conn& c = m_conns[i];
    close_conn(i);
    c = Conn{};
    c.t_open = now_ns();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      fail_later(i);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(m_port));
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno != EINPROGRESS) {
      close(fd);
      fail_later(i);
      return;
    }
    c.fd = fd;
    m_open++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = i;
    c.want_out = true;
    c.connecting = true;
    epoll_ctl(m_ep, EPOLL_CTL_ADD, fd, &ev);
  }

  void close_conn(size_t i) {
    Conn& c = m_conns[i];
    if (c.fd >= 0) {
      epoll_ctl(m_ep, EPOLL_CTL_DEL, c.fd, nullptr);
      SSL_free(c.ssl);
      c.ssl = nullptr;
      close(c.fd);
      c.fd = -1;
      m_open--;
    }
    c.in_request = false;
  }

  // Sends a request on an open connection and resets the response state.
  void send(size_t i, const std::string& req) {
    Conn& c = m_conns[i];
    c.req = req;
    c.req_off = 0;
    c.in_request = true;
    c.resp.reset();
    c.got_first = false;
    c.t_sent = now_ns();
    write_some(i);
  }

  // After a complete response: close when the run is over, reconnect when
  // the server closes, else send `req` again on the kept-alive connection.
  void next_or_close(size_t i, bool over, const std::string& req) {
    if (over) {
      close_conn(i);
    } else if (m_conns[i].resp.close) {
      open_conn(i);
    } else {
      send(i, req);
    }
  }

  // Runs until the driver is finished or the deadline passes. Returns false
  // on the deadline.
  bool run(Driver& d, uint64_t deadline) {
    epoll_event events[256];
    for (;;) {
      uint64_t now = now_ns();
      // Failed connects are reported here so that a driver that reconnects
      // from on_closed does not recurse.
      std::vector<size_t> failed;
      failed.swap(m_failed);
      for (size_t i : failed) {
        d.on_closed(i, now, true);
      }
      d.tick(now);
      if (d.finished(now)) {
        return true;
      }
      if (now >= deadline) {
        return false;
      }
      int n = epoll_wait(m_ep, events, 256, m_failed.empty() && !d.busy() ? 2 : 0);
      for (int k = 0; k < n; k++) {
        size_t i = static_cast<size_t>(events[k].data.u64);
        Conn& c = m_conns[i];
        if (c.fd < 0) {
          continue;
        }
        uint32_t e = events[k].events;
        if (c.connecting) {
          int err = 0;
          socklen_t len = sizeof err;
          getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
          if (err != 0) {
            close_conn(i);
            fail_later(i);
            continue;
          }
          if ((e & EPOLLOUT) == 0) {
            continue;
          }
          c.connecting = false;
          set_out(i, false);
          if (m_tls != nullptr) {
            c.ssl = bench_tls_client_conn(m_tls, c.fd);
            c.handshaking = true;
          } else {
            d.on_connected(i);
            continue;
          }
        }
        if (c.handshaking) {
          handshake_step(i, d);
          continue;
        }
        if (e & EPOLLOUT) {
          write_some(i);
        }
        if (c.fd >= 0 && (e & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
          read_some(i, d);
        }
      }
    }
  }

private:
  // Moves a TLS handshake on; the driver hears on_connected once it is done.
  void handshake_step(size_t i, Driver& d) {
    Conn& c = m_conns[i];
    bool want_write = false;
    int r = bench_tls_handshake(c.ssl, &want_write);
    if (r < 0) {
      close_conn(i);
      fail_later(i);
      return;
    }
    set_out(i, r == 0 && want_write);
    if (r == 1) {
      c.handshaking = false;
      d.on_connected(i);
    }
  }

  ssize_t conn_recv(Conn& c, char* buf, size_t n) {
    return c.ssl ? bench_tls_recv(c.ssl, buf, n) : recv(c.fd, buf, n, 0);
  }

  ssize_t conn_send(Conn& c, const char* p, size_t n) {
    return c.ssl ? bench_tls_send(c.ssl, p, n) : ::send(c.fd, p, n, MSG_NOSIGNAL);
  }

  void fail_later(size_t i) {
    m_connect_failures++;
    m_failed.push_back(i);
  }

  void set_out(size_t i, bool on) {
    Conn& c = m_conns[i];
    if (c.want_out == on) {
      return;
    }
    c.want_out = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = i;
    epoll_ctl(m_ep, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void write_some(size_t i) {
    Conn& c = m_conns[i];
    while (c.req_off < c.req.size()) {
      ssize_t n = conn_send(c, c.req.data() + c.req_off, c.req.size() - c.req_off);
      if (n > 0) {
        c.req_off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        set_out(i, true);
        return;
      }
      return; // the read side reports the failure
    }
    set_out(i, false);
  }

  void read_some(size_t i, Driver& d) {
    static char buf[256 * 1024];
    const int rounds = m_tls != nullptr ? 32 : 8;
    for (int round = 0; round < rounds; round++) {
      Conn& c = m_conns[i];
      if (c.fd < 0 || c.connecting || c.handshaking) {
        return;
      }
      ssize_t n = conn_recv(c, buf, sizeof buf);
      uint64_t now = now_ns();
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      }
      if (n <= 0) {
        bool complete = c.in_request && c.resp.st == Resp::St::to_eof;
        bool error = c.in_request && !complete;
        close_conn(i);
        if (complete) {
          c.resp.st = Resp::St::done;
          d.on_response(i, now);
        }
        d.on_closed(i, now, error);
        return;
      }
      size_t len = static_cast<size_t>(n);
      size_t off = 0;
      while (off < len) {
        Conn& cc = m_conns[i];
        if (!cc.in_request || cc.fd < 0) {
          break; // bytes nobody asked for; dropped
        }
        if (!cc.got_first) {
          cc.got_first = true;
          cc.t_first = now;
          d.on_first_byte(i, now);
        }
        off += feed(cc.resp, buf + off, len - off, [&](const char* p, size_t m) { d.on_body(i, p, m, now); });
        if (cc.resp.st == Resp::St::done) {
          cc.in_request = false;
          d.on_response(i, now);
        }
      }
      if (len < sizeof buf && m_conns[i].ssl == nullptr) {
        return; // drained; level-triggered epoll reports anything newer
      }
      // TLS returns one record per read: read on until EAGAIN.
    }
  }

  int m_port;
  SSL_CTX* m_tls;
  int m_ep = -1;
  std::vector<Conn> m_conns;
  size_t m_open = 0;
  long m_connect_failures = 0;
  std::vector<size_t> m_failed;
};

std::string make_request(const Options& o, const std::string& path) {
  std::string r = o.method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o.port) +
                  "\r\nUser-Agent: keyshim-bench\r\nAccept: */*\r\n";
  if (o.close) {
    r += "Connection: close\r\n";
  }
  if (o.method == "POST" || o.body > 0) {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(o.body) + "\r\n\r\n";
    if (o.body > 0) {
      std::string body = R"({"model":"bench","messages":[{"role":"user","content":")";
      size_t pad = o.body > body.size() + 4 ? o.body - body.size() - 4 : 0;
      body.append(pad, 'a');
      body += "\"}]}";
      body.resize(o.body, ' ');
      r += body;
    }
  } else {
    r += "\r\n";
  }
  return r;
}

double us(uint64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Reads the watched processes' CPU once when the window opens and once when
// it closes.
struct CpuWindow {
  std::vector<int> pids;
  uint64_t start = 0;
  uint64_t end = 0;
  double cpu0 = 0;
  double cpu1 = 0;
  bool have0 = false;
  bool have1 = false;

  void tick(uint64_t now) {
    if (!have0 && now >= start) {
      cpu0 = proc_info(pids, false).cpu_s;
      have0 = true;
    }
    if (!have1 && now >= end) {
      cpu1 = proc_info(pids, false).cpu_s;
      have1 = true;
    }
  }
  double cpu() const { return have0 && have1 ? cpu1 - cpu0 : 0; }
};

// ------------------------------------------------------------------ modes

class Rps : public Driver {
public:
  Rps(Engine& e, const Options& o, uint64_t t0) : m_e(e), m_req(make_request(o, o.path)) {
    m_win.pids = o.pids;
    m_win.start = t0 + static_cast<uint64_t>(o.warmup * 1e9);
    m_win.end = m_win.start + static_cast<uint64_t>(o.seconds * 1e9);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    bool in_window = now >= m_win.start && now <= m_win.end;
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    } else if (in_window) {
      m_count++;
      m_lat.push_back(now - c.t_sent);
    }
    m_e.next_or_close(i, now >= m_win.end, m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (now < m_win.end && m_reconnects < 100000) {
      m_reconnects++;
      m_e.open_conn(i);
    }
  }
  void tick(uint64_t now) override { m_win.tick(now); }
  bool finished(uint64_t now) override { return now >= m_win.end && m_win.have1; }

  void report() {
    double window = secs(m_win.end - m_win.start);
    double cpu = m_win.cpu();
    printf("requests=%ld seconds=%.3f rps=%.0f lat_p50_us=%.1f lat_p99_us=%.1f bad=%ld errors=%ld "
           "reconnects=%ld cpu_s=%.3f cpu_us_per_req=%.2f\n",
           m_count, window, static_cast<double>(m_count) / window, us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)),
           m_bad, m_errors, m_reconnects, cpu, m_count > 0 ? cpu * 1e6 / static_cast<double>(m_count) : 0.0);
  }

private:
  Engine& m_e;
  std::string m_req;
  CpuWindow m_win;
  long m_count = 0;
  long m_bad = 0;
  long m_errors = 0;
  long m_reconnects = 0;
  std::vector<uint64_t> m_lat;
};

class Seq : public Driver {
public:
  Seq(Engine& e, const Options& o) : m_e(e), m_o(o), m_req(make_request(o, o.path)) {}
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    m_done++;
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    if (m_done > m_o.warmup_count) {
      m_ttfb.push_back(c.t_first - c.t_sent);
      m_lat.push_back(now - c.t_sent);
    }
    m_e.next_or_close(i, finished(now), m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (!finished(now) && m_errors < 1000) {
      m_reconnects++;
      m_e.open_conn(i);
    }
  }
  bool finished(uint64_t) override { return m_done >= m_o.count + m_o.warmup_count || m_errors >= 1000; }
  void report(bool in_time) {
    printf(
        "requests=%zu ttfb_p50_us=%.1f ttfb_p99_us=%.1f lat_p50_us=%.1f lat_p99_us=%.1f bad=%ld errors=%ld "
        "reconnects=%ld complete=%d\n",
        m_lat.size(), us(pct(m_ttfb, 0.5)), us(pct(m_ttfb, 0.99)), us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)),
        m_bad, m_errors, m_reconnects, in_time ? 1 : 0);
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  long m_done = 0;
  long m_bad = 0;
  long m_errors = 0;
  long m_reconnects = 0;
  std::vector<uint64_t> m_ttfb;
  std::vector<uint64_t> m_lat;
};

class Events : public Driver {
public:
  Events(Engine& e, const Options& o) : m_e(e), m_o(o) {
    std::string path = "/ts?events=" + std::to_string(o.events) + "&gap_us=" + std::to_string(o.gap_us) +
                       "&size=" + std::to_string(o.size > 0 ? o.size : 64);
    m_req = make_request(o, path);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_body(size_t i, const char* p, size_t n, uint64_t now) override {
    Conn& c = m_e.conn(i);
    while (n > 0) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - p) : n;
      if (c.line.size() < 256) {
        c.line.append(p, std::min(take, 256 - c.line.size()));
      }
      if (nl == nullptr) {
        return;
      }
      if (c.line.compare(0, 8, "data: t=") == 0) {
        uint64_t sent = strtoull(c.line.c_str() + 8, nullptr, 10);
        // The first event of each stream also carries the proxy's setup
        // cost; TTFB measures that, this measures relaying.
        if (c.events_seen++ > 0 && sent <= now) {
          m_lat.push_back(now - sent);
        }
      }
      c.line.clear();
      p += take + 1;
      n -= take + 1;
    }
  }
  void on_response(size_t i, uint64_t) override {
    Conn& c = m_e.conn(i);
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    m_done++;
    m_e.close_conn(i);
  }
  void on_closed(size_t, uint64_t, bool error) override {
    if (error) {
      m_errors++;
      m_done++;
    }
  }
  bool finished(uint64_t) override { return m_done >= static_cast<long>(m_e.size()); }
  void report(bool in_time) {
    long expected = static_cast<long>(m_e.size()) * (m_o.events - 1);
    printf("events=%zu expected=%ld lat_p50_us=%.1f lat_p99_us=%.1f lat_max_us=%.1f bad=%ld errors=%ld "
           "complete=%d\n",
           m_lat.size(), expected, us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)), us(pct(m_lat, 1.0)), m_bad,
           m_errors, in_time ? 1 : 0);
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  long m_done = 0;
  long m_bad = 0;
  long m_errors = 0;
  std::vector<uint64_t> m_lat;
};

class Held : public Driver {
public:
  Held(Engine& e, const Options& o, uint64_t t0) : m_e(e), m_o(o), m_t0(t0) {
    m_req = make_request(o, "/hold?size=" + std::to_string(o.size > 0 ? o.size : 64));
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_first_byte(size_t, uint64_t now) override { m_first.push_back(now - m_t0); }
  void on_body(size_t i, const char*, size_t n, uint64_t now) override {
    Conn& c = m_e.conn(i);
    if (n > 0 && !c.got_event) {
      c.got_event = true;
      if (c.resp.status == 200) {
        m_completed++;
        m_last_event = now;
      } else {
        m_bad++;
      }
    }
  }
  void on_response(size_t i, uint64_t) override {
    // A hold stream never ends by itself: an ended answer is an error page.
    Conn& c = m_e.conn(i);
    if (!c.got_event) {
      c.got_event = true;
      m_bad++;
    }
    m_e.close_conn(i);
  }
  void on_closed(size_t i, uint64_t, bool) override {
    Conn& c = m_e.conn(i);
    if (!c.got_event) {
      c.got_event = true;
      m_failed++;
    }
  }
  // Connects are opened a batch at a time between events: each connect()
  // on loopback runs the handshake in the caller, so opening thousands in
  // one loop would leave every answer unread until the last one.
  bool busy() const override { return m_opened < m_e.size(); }
  void tick(uint64_t now) override {
    for (int k = 0; k < 64 && m_opened < m_e.size(); k++) {
      m_e.open_conn(m_opened++);
    }
    if (!m_o.pids.empty() && now >= m_next_sample) {
      m_next_sample = now + 10 * k_ms;
      sample_rss();
    }
    if (m_settled == 0 && m_completed + m_failed + m_bad >= static_cast<long>(m_e.size())) {
      m_settled = now;
    }
  }
  bool finished(uint64_t now) override {
    return m_settled != 0 && now >= m_settled + static_cast<uint64_t>(m_o.hold_ms) * k_ms;
  }
  // Peak RSS of each watched process and of their sum.
  void sample_rss() {
    m_peak_each.resize(m_o.pids.size(), 0);
    long sum = 0;
    for (size_t k = 0; k < m_o.pids.size(); k++) {
      long rss = proc_info({m_o.pids[k]}, false).rss_kb;
      m_peak_each[k] = std::max(m_peak_each[k], rss);
      sum += rss;
    }
    m_rss_peak = std::max(m_rss_peak, sum);
  }
  void report() {
    sample_rss();
    ProcInfo end = proc_info(m_o.pids, false);
    std::string each;
    for (long kb : m_peak_each) {
      if (!each.empty()) {
        each += ',';
      }
      each += std::to_string(kb);
    }
    size_t n = m_e.size();
    bool all_first = m_first.size() == n;
    uint64_t first_max = m_first.empty() ? 0 : *std::max_element(m_first.begin(), m_first.end());
    uint64_t event_all = m_completed == static_cast<long>(n) ? m_last_event - m_t0 : 0;
    printf("streams=%zu completed=%ld failed=%ld bad=%ld first_bytes=%zu all_first_byte_s=%s "
           "first_byte_p50_s=%.4f "
           "first_byte_max_s=%.4f all_first_event_s=%.4f rss_peak_kb=%ld rss_peak_each_kb=%s hwm_kb=%ld "
           "connect_failures=%ld\n",
           n, m_completed, m_failed, m_bad, m_first.size(),
           all_first ? fixed(secs(first_max), 4).c_str() : "none", secs(pct(m_first, 0.5)), secs(first_max),
           secs(event_all), m_rss_peak, each.empty() ? "-" : each.c_str(), end.hwm_kb,
           m_e.connect_failures());
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  uint64_t m_t0;
  std::vector<uint64_t> m_first;
  size_t m_opened = 0;
  long m_completed = 0;
  long m_failed = 0;
  long m_bad = 0;
  uint64_t m_last_event = 0;
  uint64_t m_settled = 0;
  uint64_t m_next_sample = 0;
  long m_rss_peak = 0;
  std::vector<long> m_peak_each;
};

// One request on a fresh connection, timed from connect() to the last byte.
class OneShot : public Driver {
public:
  OneShot(Engine& e, const Options& o) : m_e(e), m_req(make_request(o, o.path)) {}
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    m_status = c.resp.status;
    m_lat = now - c.t_open;
    m_done = true;
    m_e.close_conn(i);
  }
  void on_closed(size_t, uint64_t, bool error) override {
    if (error) {
      m_done = true;
      m_status = -1;
    }
  }
  bool finished(uint64_t) override { return m_done; }
  int status() const { return m_status; }
  uint64_t latency() const { return m_lat; }

private:
  Engine& m_e;
  std::string m_req;
  bool m_done = false;
  int m_status = 0;
  uint64_t m_lat = 0;
};

// Times one fresh request; 0 when it failed or ran out of time.
uint64_t one_request(const Options& o, double timeout_s, int* status) {
  Engine e(o.port, 1);
  OneShot shot(e, o);
  e.open_conn(0);
  bool ok = e.run(shot, now_ns() + static_cast<uint64_t>(timeout_s * 1e9));
  *status = ok ? shot.status() : 0;
  return ok && shot.status() > 0 ? shot.latency() : 0;
}

// Connections that connect and then say nothing.
class Silent : public Driver {
public:
  explicit Silent(Engine& e) : m_e(e) {}
  void on_connected(size_t) override { m_connected++; }
  void on_response(size_t i, uint64_t) override { m_e.close_conn(i); }
  void on_closed(size_t, uint64_t, bool) override { m_failed++; }
  bool finished(uint64_t) override { return m_connected + m_failed >= static_cast<long>(m_e.size()); }
  long connected() const { return m_connected; }

private:
  Engine& m_e;
  long m_connected = 0;
  long m_failed = 0;
};

class Bulk : public Driver {
public:
  Bulk(Engine& e, const Options& o, uint64_t t0) : m_e(e) {
    std::string path = "/sse?events=" + std::to_string(o.events) +
                       "&gap_us=0&size=" + std::to_string(o.size) +
                       (o.batch > 0 ? "&batch=" + std::to_string(o.batch) : "");
    m_req = make_request(o, path);
    m_win.pids = o.pids;
    m_win.start = t0 + static_cast<uint64_t>(o.warmup * 1e9);
    m_win.end = m_win.start + static_cast<uint64_t>(o.seconds * 1e9);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_body(size_t, const char*, size_t n, uint64_t now) override {
    if (now >= m_win.start && now <= m_win.end) {
      m_bytes += n;
    }
  }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    m_streams++;
    m_e.next_or_close(i, now >= m_win.end, m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (now < m_win.end && m_errors < 1000) {
      m_e.open_conn(i);
    }
  }
  void tick(uint64_t now) override { m_win.tick(now); }
  bool finished(uint64_t now) override { return now >= m_win.end && m_win.have1; }
  void report() {
    double window = secs(m_win.end - m_win.start);
    double gb = static_cast<double>(m_bytes) / 1e9;
    double cpu = m_win.cpu();
    printf("bytes=%" PRIu64
           " seconds=%.3f gb_per_s=%.3f cpu_s=%.3f cpu_s_per_gb=%.3f streams_done=%ld bad=%ld "
           "errors=%ld\n",
           m_bytes, window, gb / window, cpu, gb > 0 ? cpu / gb : 0.0, m_streams, m_bad, m_errors);
  }

private:
  Engine& m_e;
  std::string m_req;
  CpuWindow m_win;
  uint64_t m_bytes = 0;
  long m_streams = 0;
  long m_bad = 0;
  long m_errors = 0;
};

// ------------------------------------------------------------- commands

int cmd_freeport() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    perror("loadgen: freeport");
    return 1;
  }
  printf("%d\n", ntohs(addr.sin_port));
  close(fd);
  return 0;
}

int cmd_wait(const Options& o) {
  uint64_t deadline = now_ns() + static_cast<uint64_t>(o.timeout * 1e9);
  while (now_ns() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(o.port));
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    close(fd);
    if (rc == 0) {
      printf("ready=1\n");
      return 0;
    }
    usleep(20000);
  }
  printf("ready=0\n");
  return 1;
}

int cmd_procinfo(const Options& o) {
  ProcInfo p = proc_info(o.pids, true);
  printf("rss_kb=%ld hwm_kb=%ld threads=%ld fds=%ld cpu_s=%.3f alive=%d\n", p.rss_kb, p.hwm_kb, p.threads,
         p.fds, p.cpu_s, p.ok ? 1 : 0);
  return p.ok ? 0 : 1;
}

uint64_t deadline_of(const Options& o) {
  return now_ns() + static_cast<uint64_t>(o.timeout * 1e9);
}

// The closed-loop modes: open all `n` connections at once, run the driver
// (built from the engine, the options and the start time) to its end.
template <class D> int run_open_loop(const Options& o, int n) {
  uint64_t t0 = now_ns();
  Engine e(o.port, static_cast<size_t>(n));
  D d(e, o, t0);
  for (size_t i = 0; i < e.size(); i++) {
    e.open_conn(i);
  }
  e.run(d, deadline_of(o));
  d.report();
  return 0;
}

int cmd_rps(const Options& o) {
  return run_open_loop<Rps>(o, o.conc);
}

int cmd_seq(const Options& o) {
  Engine e(o.port, 1);
  Seq d(e, o);
  e.open_conn(0);
  bool ok = e.run(d, deadline_of(o));
  d.report(ok);
  return 0;
}

int cmd_events(const Options& o) {
  Engine e(o.port, static_cast<size_t>(o.streams));
  Events d(e, o);
  for (size_t i = 0; i < e.size(); i++) {
    e.open_conn(i);
  }
  bool ok = e.run(d, deadline_of(o));
  d.report(ok);
  return 0;
}

int cmd_held(const Options& o) {
  uint64_t deadline = deadline_of(o);
  uint64_t t0 = now_ns();
  Engine e(o.port, static_cast<size_t>(o.streams));
  Held d(e, o, t0);
  e.run(d, deadline);
  d.report();
  return 0;
}

int cmd_silent(const Options& o) {
  // A first request after a pause costs more than one in a busy loop
  // (caches, wake-ups), so both sides are measured the same way: a pause,
  // then one request on a fresh connection.
  const useconds_t pause_us = 200000;
  std::vector<uint64_t> base;
  for (int k = 0; k < o.baseline; k++) {
    usleep(pause_us);
    int status = 0;
    uint64_t lat = one_request(o, 5, &status);
    if (lat > 0 && status == 200) {
      base.push_back(lat);
    }
  }
  // The silent ones: connected, then nothing; the pause lets the server
  // accept them and do what it does with them.
  Engine silent(o.port, static_cast<size_t>(o.silent));
  Silent s(silent);
  for (size_t i = 0; i < silent.size(); i++) {
    silent.open_conn(i);
  }
  silent.run(s, now_ns() + 3 * k_s);
  usleep(pause_us);
  int status = 0;
  const uint64_t t_with = now_ns();
  uint64_t first = one_request(o, o.timeout, &status);
  // The first request is the figure; a few more, measured the same way with
  // the silent ones still open, tell an effect from a noisy moment.
  std::vector<uint64_t> with;
  if (first > 0) {
    with.push_back(first);
    for (int k = 1; k < o.baseline; k++) {
      double left = o.timeout - secs(now_ns() - t_with) - 0.2;
      if (left < 0.5) {
        break; // the phase's bound holds for all of them together
      }
      usleep(pause_us);
      int st = 0;
      uint64_t lat = one_request(o, std::min(left, 5.0), &st);
      if (lat > 0 && st == 200) {
        with.push_back(lat);
      }
    }
  }
  printf("silent=%d connected=%ld baseline_p50_us=%.1f with_silent_us=%s with_silent_p50_us=%s status=%d "
         "complete=%d\n",
         o.silent, s.connected(), us(pct(base, 0.5)), first > 0 ? fixed(us(first), 1).c_str() : "timeout",
         with.empty() ? "timeout" : fixed(us(pct(with, 0.5)), 1).c_str(), status, first > 0 ? 1 : 0);
  return 0;
}

int cmd_bulk(const Options& o) {
  return run_open_loop<Bulk>(o, o.streams);
}

// Starts the command with stdout on stderr; it dies with this process.
pid_t spawn(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(2, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// SIGTERM, then SIGKILL after 5 s; reaps it.
void stop_child(pid_t pid) {
  kill(pid, SIGTERM);
  for (int k = 0; k < 500; k++) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      return;
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// The first request after a start: the command is started, then fresh
// connections try a request every 0.2 ms until one is answered 200. The
// figures: start to that answer; that request alone (connect to last
// byte; a proxy that loads something at its first request pays it here);
// and a second request after it, for comparison.
int cmd_first(const Options& o) {
  const uint64_t t0 = now_ns();
  const uint64_t deadline = t0 + static_cast<uint64_t>(o.timeout * 1e9);
  pid_t pid = spawn(o.command);
  if (pid < 0) {
    perror("loadgen: fork");
    return 1;
  }
  int status = 0;
  long tries = 0;
  uint64_t first = 0;
  uint64_t t_answer = 0;
  bool exited = false; // reaped: its pid may belong to another process now
  while (first == 0 && now_ns() < deadline && !exited) {
    tries++;
    first = one_request(o, secs(deadline - now_ns()), &status);
    t_answer = now_ns();
    if (first == 0) {
      exited = waitpid(pid, nullptr, WNOHANG) == pid;
      usleep(200);
    }
  }
  int status2 = 0;
  uint64_t second = first > 0 && status == 200 ? one_request(o, 5, &status2) : 0;
  if (!exited) {
    stop_child(pid);
  } else {
    fprintf(stderr, "loadgen: %s exited before answering\n", o.command[0].c_str());
  }
  bool ok = first > 0 && status == 200;
  printf("first_answer_ms=%s first_request_ms=%s second_request_ms=%s status=%d tries=%ld complete=%d\n",
         ok ? fixed(secs(t_answer - t0) * 1e3, 2).c_str() : "none",
         ok ? fixed(secs(first) * 1e3, 2).c_str() : "none",
         second > 0 ? fixed(secs(second) * 1e3, 2).c_str() : "none", status, tries, ok ? 1 : 0);
  return 0;
}

int cmd_ws(const Options& o) {
  WsOptions w;
  w.port = o.port;
  w.path = o.path;
  w.conns = o.conc;
  w.size = static_cast<std::size_t>(o.size > 0 ? o.size : 64);
  w.seconds = o.seconds;
  w.warmup = o.warmup;
  w.timeout = o.timeout;
  w.pids = o.pids;
  return run_ws(w);
}

void usage() {
  fprintf(stderr, "usage: bench_loadgen freeport|wait|procinfo|rps|seq|events|held|silent|bulk|first|ws\n"
                  "       [--option value]... [-- COMMAND...]\n"
                  "(see the comment at the top of bench/loadgen.cpp)\n");
}

} // namespace

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  Options o;
  if (!parse_options(argc, argv, &o)) {
    usage();
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.mode == "freeport") {
    return cmd_freeport();
  }
  if (o.mode == "procinfo") {
    return cmd_procinfo(o);
  }
  if (o.port <= 0) {
    fprintf(stderr, "loadgen: --port is required\n");
    return 2;
  }
  if (!o.tls_ca.empty()) {
    g_client_tls = bench_tls_client(o.tls_ca.c_str());
    if (g_client_tls == nullptr) {
      return 2;
    }
  }
  if (o.mode == "wait") {
    return cmd_wait(o);
  }
  if (o.mode == "first") {
    return cmd_first(o);
  }
  if (o.mode == "ws") {
    return cmd_ws(o);
  }
  if (o.mode == "rps") {
    return cmd_rps(o);
  }
  if (o.mode == "seq") {
    return cmd_seq(o);
  }
  if (o.mode == "events") {
    return cmd_events(o);
  }
  if (o.mode == "held") {
    return cmd_held(o);
  }
  if (o.mode == "silent") {
    return cmd_silent(o);
  }
  if (o.mode == "bulk") {
    if (o.size <= 0) {
      fprintf(stderr, "loadgen: bulk needs --size\n");
      return 2;
    }
    return cmd_bulk(o);
  }
  usage();
  return 2;
}
