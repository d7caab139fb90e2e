// The mock upstream's HTTP server (mock_upstream_server.hpp): one epoll
// loop that accepts, reads requests (mock_upstream_request.hpp), answers
// them or produces their streams (mock_upstream_routes.hpp), and writes what
// each socket takes, never blocking. Streams paced by gap_us wait on one
// timerfd, armed for the earliest of them.
#include "mock_upstream_server.hpp"

#include "bench_net.hpp"
#include "mock_upstream_conn.hpp"
#include "mock_upstream_request.hpp"
#include "mock_upstream_routes.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>

namespace mock {

namespace {

volatile sig_atomic_t g_stop = 0;

void on_signal(int) {
  g_stop = 1;
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

// SIGTERM and SIGINT end the loop; a peer's close is no SIGPIPE.
void install_signals() {
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// A non-blocking socket listening on 127.0.0.1:port (0: any free port);
// prints "port=N". -1, after a message, when it cannot listen.
int listen_loopback(int port) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = loopback_v4(port);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 65535) != 0) {
    fprintf(stderr, "mock_upstream: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return -1;
  }
  socklen_t alen = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen);
  printf("port=%d\n", ntohs(addr.sin_port));
  fflush(stdout);
  return lfd;
}

// One epoll event: the listening socket (whose epoll tag is lfd's address),
// the stream timer, or a connection.
void on_event(const epoll_event& ev, int* lfd, int* reserve_fd) {
  void* ptr = ev.data.ptr;
  if (ptr == lfd) {
    accept_all(*lfd, reserve_fd);
  } else if (ptr == &g_timer) {
    uint64_t expirations = 0;
    ssize_t r = read(g_timer, &expirations, sizeof expirations);
    (void)r;
    g_armed_for = 0;
  } else {
    Conn* c = static_cast<Conn*>(ptr);
    uint32_t e = ev.events;
    if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      on_readable(c); // reads to EOF and closes, or moves on
    } else if (e & EPOLLOUT) {
      pump(c);
    }
  }
}

} // namespace

int run_http(int port, long max_seconds, SSL_CTX* tls) {
  g_tls = tls;
  install_signals();
  int lfd = listen_loopback(port);
  if (lfd < 0) {
    return 1;
  }
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
      on_event(events[i], &lfd, &reserve_fd);
    }
    run_timers();
    arm_timer();
  }
  return 0;
}

} // namespace mock
