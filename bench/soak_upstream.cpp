// The soak's upstream: a fault-injecting HTTP/1.1 server on 127.0.0.1, one
// thread per connection (the soak is about correctness, not throughput). The
// request path /soak/KIND/ID/SEED says what to do (soak_common.hpp); the
// stream's bytes derive from SEED so the client can check them byte for byte.
// Recoverable kinds fail only the first attempt(s) of an ID, so keyshim's
// failover to the next attempt gets the real stream.
//
//   bench_soak_upstream [--port N] [--gap-ms G] [--stall-ms S] [--max-seconds T]
// prints "port=N" once listening; exits on SIGTERM/SIGINT, when its parent
// dies, or after --max-seconds.
#include "bench_net.hpp"
#include "soak_common.hpp"
#include "soak_upstream_ws.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace {

using namespace std::chrono_literals;

constexpr std::size_t k_max_head = 64 * 1024;
constexpr std::size_t k_max_body = 1024 * 1024;
constexpr int k_max_connections = 2048;
constexpr std::size_t k_max_tracked_ids = 200000;

std::atomic<bool> g_stop{false};
std::atomic<int> g_connections{0};

struct Options {
  int port = 0;
  int gap_ms = 40;
  int stall_ms = 4000;
  int max_seconds = 4 * 3600;
};
Options g_opt;

// How many attempts of each request ID this upstream has seen.
class Attempts {
public:
  int next(std::uint64_t id) {
    std::lock_guard lock(m_mutex);
    if (m_seen.size() > k_max_tracked_ids) {
      m_seen.clear(); // bounded memory; an old ID seen again just fails once more
    }
    return ++m_seen[id];
  }

private:
  std::mutex m_mutex;
  std::unordered_map<std::uint64_t, int> m_seen;
};
Attempts g_attempts;

struct Request {
  soak::Kind kind = soak::Kind::sse;
  std::uint64_t id = 0;
  std::uint64_t seed = 0;
  bool has_key = false;
  std::string key_id; // "GEN-INDEX" of the key keyshim sent
  std::string head;   // the request head, kept for a WebSocket upgrade
};

std::string steady_ns() {
  return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count());
}

void pause_ms(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!g_stop && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(50ms);
  }
}

void gap(std::minstd_rand& rng) {
  if (g_opt.gap_ms > 0) {
    pause_ms(static_cast<int>(rng() % static_cast<unsigned>(g_opt.gap_ms + 1)));
  }
}

std::size_t header_value_size(const std::string& head, const char* name) {
  std::string lower = head;
  for (auto& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  auto at = lower.find(name);
  if (at == std::string::npos) {
    return 0;
  }
  return static_cast<std::size_t>(std::strtoull(lower.c_str() + at + std::strlen(name), nullptr, 10));
}

bool parse_target(const std::string& head, Request& req) {
  auto sp1 = head.find(' ');
  auto sp2 = head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    return false;
  }
  std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
  char kind[32] = {};
  unsigned long long id = 0;
  unsigned long long seed = 0;
  if (std::sscanf(target.c_str(), "/soak/%31[a-z_]/%llu/%llu", kind, &id, &seed) != 3 ||
      !soak::kind_from_name(kind, req.kind)) {
    return false;
  }
  req.id = id;
  req.seed = seed;
  req.key_id = soak::key_id_of(head);
  req.has_key = !req.key_id.empty();
  return true;
}

// Reads one request (head and Content-Length body) from `fd`; `buffer`
// keeps bytes of a pipelined next request. False on EOF, error or nonsense.
bool read_request(int fd, std::string& buffer, Request& req) {
  std::size_t end = std::string::npos;
  char chunk[16384];
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > k_max_head) {
      return false;
    }
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      return false;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  std::string head = buffer.substr(0, end + 4);
  std::size_t body = header_value_size(head, "\r\ncontent-length:");
  if (body > k_max_body || !parse_target(head, req)) {
    return false;
  }
  if (req.kind == soak::Kind::ws) {
    req.head = head;
  }
  while (buffer.size() < head.size() + body) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      return false;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  buffer.erase(0, head.size() + body);
  return true;
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

std::string error_answer(int status, const char* reason, const std::string& extra) {
  std::string body = R"({"error":{"message":"soak fault","type":"soak_error"}})";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra + "\r\n" + body;
}

// The 429's hint, in one of the shapes keyshim reads (all short: the soak's
// pool file caps cooldowns at 2 s anyway).
std::string rate_limit_hint(std::uint64_t id) {
  switch (id % 5) {
  case 0:
    return "Retry-After: 1\r\n";
  case 1:
    return "retry-after-ms: 700\r\n";
  case 2:
    return "x-ratelimit-reset-requests: 1s\r\n";
  case 3:
    return "x-ratelimit-reset-tokens: 850ms\r\n";
  default: {
    char date[64];
    std::time_t t = std::time(nullptr) + 1;
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return std::string("Retry-After: ") + date + "\r\n";
  }
  }
}

// Sends the seed's body: the whole of it, or only its first half of pieces
// (`cut`). False when the client (keyshim) went away.
bool send_body(int fd, const soak::Content& c, bool chunked, bool cut, std::minstd_rand& rng) {
  std::size_t pieces = cut ? (c.piece_count + 1) / 2 : c.piece_count;
  std::size_t from = 0;
  for (std::size_t i = 0; i < pieces && !g_stop; ++i) {
    std::string_view piece(c.body.data() + from, c.cuts[i] - from);
    from = c.cuts[i];
    if (!soak::write_all(fd, chunked ? chunk(piece) : std::string(piece))) {
      return false;
    }
    gap(rng);
  }
  return cut || !chunked || soak::write_all(fd, "0\r\n\r\n");
}

bool send_stream(int fd, const Request& req, std::minstd_rand& rng) {
  bool length = soak::kind_has_length(req.kind);
  soak::Content c = soak::make_content(req.seed, length);
  std::string head =
      "HTTP/1.1 200 OK\r\nX-Soak-Key: " + req.key_id + "\r\nX-Soak-At: " + steady_ns() + "\r\n";
  if (length) {
    head += "Content-Type: application/json\r\nContent-Length: " + std::to_string(c.body.size()) + "\r\n";
  } else {
    head += "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n";
  }
  if (req.kind == soak::Kind::probe) {
    head += "Connection: close\r\n";
  }
  if (!soak::write_all(fd, head + "\r\n")) {
    return false;
  }
  gap(rng);
  bool cut = soak::kind_cuts(req.kind);
  if (!send_body(fd, c, !length, cut, rng)) {
    return false;
  }
  if (req.kind == soak::Kind::stall_mid) {
    pause_ms(g_opt.stall_ms); // keyshim's idle_timeout must cut the stream first
  } else if (req.kind == soak::Kind::broken_chunk) {
    soak::write_all(fd, "zz\r\nnot a chunk\r\n");
  }
  return !cut && req.kind != soak::Kind::probe;
}

// Answers one request; false when the connection must close (after a fault).
bool answer(int fd, const Request& req, std::minstd_rand& rng) {
  using soak::Kind;
  int attempt =
      (req.kind >= Kind::reset_head && req.kind <= Kind::server_errors) ? g_attempts.next(req.id) : 0;
  bool fail = attempt == 1 || (req.kind == Kind::server_errors && attempt == 2);
  if (!fail) {
    return send_stream(fd, req, rng);
  }
  switch (req.kind) {
  case Kind::reset_head:
    soak::arm_reset(fd); // the caller closes: one close per fd
    return false;
  case Kind::stall_first:
    pause_ms(g_opt.stall_ms);
    return false;
  case Kind::error_event:
    soak::write_all(
        fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                chunk("data: {\"error\":{\"type\":\"overloaded_error\",\"message\":\"soak\"}}\n\n") +
                "0\r\n\r\n");
    return false;
  case Kind::rate_limited:
    return soak::write_all(fd, error_answer(429, "Too Many Requests", rate_limit_hint(req.id)));
  case Kind::unauthorized:
    return soak::write_all(fd, error_answer(401, "Unauthorized", ""));
  default:
    return soak::write_all(fd, attempt == 1 ? error_answer(500, "Internal Server Error", "")
                                            : error_answer(503, "Service Unavailable", ""));
  }
}

void serve_connection(int fd) {
  soak::set_timeouts(fd, 60); // keyshim keeps idle connections for 20 s
  std::minstd_rand rng(static_cast<unsigned>(fd) * 7919u + static_cast<unsigned>(std::time(nullptr)));
  std::string buffer;
  bool open = true;
  while (open && !g_stop) {
    Request req;
    if (!read_request(fd, buffer, req) || !req.has_key) {
      break;
    }
    if (req.kind == soak::Kind::ws) {
      serve_ws(fd, req.head, req.key_id, steady_ns(), req.seed, g_stop);
      break;
    }
    open = answer(fd, req, rng);
    if (!open && req.kind == soak::Kind::reset_mid) {
      soak::arm_reset(fd);
    }
  }
  // The only close of this fd: a second one could close a connection
  // another thread has just accepted under the same number.
  ::close(fd);
  --g_connections;
}

int listen_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = loopback_v4(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 1024) != 0) {
    std::perror("soak upstream: bind/listen on 127.0.0.1");
    std::exit(1);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("port=%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  return fd;
}

void accept_loop(int listener) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(g_opt.max_seconds);
  while (!g_stop && std::chrono::steady_clock::now() < until) {
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) {
      continue;
    }
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    if (g_connections >= k_max_connections) {
      ::close(fd);
      continue;
    }
    ++g_connections;
    std::thread(serve_connection, fd).detach();
  }
}

void on_signal(int) {
  g_stop = true;
}

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--port") {
      g_opt.port = value;
    } else if (flag == "--gap-ms") {
      g_opt.gap_ms = value;
    } else if (flag == "--stall-ms") {
      g_opt.stall_ms = value;
    } else if (flag == "--max-seconds") {
      g_opt.max_seconds = value;
    } else {
      std::fprintf(stderr, "soak upstream: unknown flag \"%s\"\n", argv[i]);
      return 2;
    }
  }
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGINT, on_signal);
  ::signal(SIGPIPE, SIG_IGN);
  accept_loop(listen_loopback(g_opt.port));
  // Stream threads notice g_stop within one pause; give them a moment.
  for (int i = 0; i < 100 && g_connections > 0; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}
