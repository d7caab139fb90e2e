#pragma once
// The load driver's engine: one thread, one epoll set, N client connections
// to 127.0.0.1:PORT (plain or TLS), each sending a request and reading its
// answer with the response reader (loadgen_http.hpp). A mode is a Driver:
// it hears what happens on the connections and decides what comes next.
// Everything here is inline, as it was when the load driver was one file:
// each mode's translation unit compiles the whole per-request path.
#include "bench_net.hpp"
#include "bench_tls.hpp"
#include "loadgen_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace loadgen {

// --tls-ca: every connection is TLS. One for the whole program (main sets
// it), so outside the unnamed namespace below.
inline SSL_CTX* g_client_tls = nullptr;

// The rest has internal linkage, as it had in the one-file load driver:
// GCC then inlines the response reader into the event loop of each mode's
// translation unit, as it did there, instead of calling shared copies.
namespace {

constexpr uint64_t k_ms = 1000000ull;
constexpr uint64_t k_s = 1000000000ull;

inline uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * k_s + static_cast<uint64_t>(ts.tv_nsec);
}

inline double secs(uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

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
    sockaddr_in addr = loopback_v4(m_port);
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
      report_failed(d, now);
      d.tick(now);
      if (d.finished(now)) {
        return true;
      }
      if (now >= deadline) {
        return false;
      }
      int n = epoll_wait(m_ep, events, 256, m_failed.empty() && !d.busy() ? 2 : 0);
      for (int k = 0; k < n; k++) {
        on_event(static_cast<size_t>(events[k].data.u64), events[k].events, d);
      }
    }
  }

private:
  // Failed connects are reported here, between rounds of events, so that a
  // driver that reconnects from on_closed does not recurse.
  void report_failed(Driver& d, uint64_t now) {
    std::vector<size_t> failed;
    failed.swap(m_failed);
    for (size_t i : failed) {
      d.on_closed(i, now, true);
    }
  }

  // One epoll event on connection i: the end of its connect, a step of its
  // TLS handshake, or its request and response.
  void on_event(size_t i, uint32_t e, Driver& d) {
    Conn& c = m_conns[i];
    if (c.fd < 0) {
      return;
    }
    if (c.connecting && !finish_connect(i, e, d)) {
      return;
    }
    if (c.handshaking) {
      handshake_step(i, d);
      return;
    }
    if (e & EPOLLOUT) {
      write_some(i);
    }
    if (c.fd >= 0 && (e & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
      read_some(i, d);
    }
  }

  // A connect in progress: failed (reported later), still pending, or done,
  // when a plain connection is handed to the driver. Returns true only when
  // a TLS connection starts its handshake, which this same event moves on.
  bool finish_connect(size_t i, uint32_t e, Driver& d) {
    Conn& c = m_conns[i];
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close_conn(i);
      fail_later(i);
      return false;
    }
    if ((e & EPOLLOUT) == 0) {
      return false;
    }
    c.connecting = false;
    set_out(i, false);
    if (m_tls == nullptr) {
      d.on_connected(i);
      return false;
    }
    c.ssl = bench_tls_client_conn(m_tls, c.fd);
    c.handshaking = true;
    return true;
  }

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

} // namespace

} // namespace loadgen
