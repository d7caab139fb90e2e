// One soak stream: see soak_stream.hpp.
#include "soak_stream.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <cstdlib>
#include <cstring>

namespace soak {
namespace {

constexpr std::size_t k_max_head = 64 * 1024;
constexpr std::size_t k_upload_declared = 65536;
constexpr std::size_t k_upload_sent = 1000;

// A blocking reader over one socket that remembers how the stream ended.
struct Reader {
  int fd;
  std::string buf;
  bool eof = false;
  bool timed_out = false;

  bool fill() {
    char data[16384];
    ssize_t n = ::recv(fd, data, sizeof(data), 0);
    if (n > 0) {
      buf.append(data, static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      timed_out = true;
    }
    eof = true; // FIN, RST or timeout: the stream is over either way
    return false;
  }
  // The next CRLF-terminated line, without its CRLF; false at the end.
  bool line(std::string& out) {
    std::size_t at = 0;
    while ((at = buf.find("\r\n")) == std::string::npos) {
      if (buf.size() > k_max_head || !fill()) {
        return false;
      }
    }
    out = buf.substr(0, at);
    buf.erase(0, at + 2);
    return true;
  }
};

struct Head {
  int status = 0;
  bool chunked = false;
  bool has_length = false;
  std::uint64_t length = 0;
};

std::string lower(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

bool read_head(Reader& r, Head& head) {
  std::string line;
  if (!r.line(line) || std::sscanf(line.c_str(), "HTTP/1.1 %d", &head.status) != 1) {
    return false;
  }
  while (r.line(line)) {
    if (line.empty()) {
      return true;
    }
    std::string l = lower(line);
    if (l.rfind("content-length:", 0) == 0) {
      head.has_length = true;
      head.length = std::strtoull(l.c_str() + 15, nullptr, 10);
    } else if (l.rfind("transfer-encoding:", 0) == 0) {
      head.chunked = l.find("chunked") != std::string::npos;
    }
  }
  return false;
}

// Reads the body into `body`, at most `limit` bytes; true when its framing
// completed (Content-Length reached, or the last chunk and the blank line).
bool read_body(Reader& r, const Head& head, std::string& body, std::uint64_t limit) {
  if (!head.chunked) {
    std::uint64_t want = head.has_length ? head.length : ~0ull;
    while (body.size() < want && body.size() < limit) {
      if (r.buf.empty() && !r.fill()) {
        return false;
      }
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(r.buf.size(), want - body.size()));
      body.append(r.buf, 0, take);
      r.buf.erase(0, take);
    }
    return body.size() == want;
  }
  std::string line;
  while (body.size() < limit && r.line(line)) {
    char* end = nullptr;
    std::uint64_t size = std::strtoull(line.c_str(), &end, 16);
    if (line.empty() || end == line.c_str()) {
      return false; // keyshim wrote a broken chunk: abnormal too
    }
    if (size == 0) {
      return r.line(line) && line.empty();
    }
    while (r.buf.size() < size + 2) {
      if (!r.fill()) {
        body.append(r.buf, 0, std::min<std::size_t>(r.buf.size(), size));
        return false;
      }
    }
    body.append(r.buf, 0, size);
    r.buf.erase(0, size + 2);
  }
  return false;
}

int connect_loopback(int port, int timeout_s) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  set_timeouts(fd, timeout_s);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string request_for(const StreamPlan& plan, int port) {
  std::string body = R"({"model":"soak-m)" + std::to_string(plan.seed % 3) + R"(","stream":true})";
  std::size_t declared = body.size();
  if (plan.hangup == Hangup::uploading) {
    body.append(k_upload_sent - body.size(), ' ');
    declared = k_upload_declared;
  }
  return "POST /soak/" + std::string(kind_name(plan.kind)) + "/" + std::to_string(plan.id) + "/" +
         std::to_string(plan.seed) + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nAuthorization: Bearer "
         "client-side-ignored\r\nContent-Length: " +
         std::to_string(declared) + "\r\nConnection: close\r\n\r\n" + body;
}

StreamResult violation(std::string detail, const Head& head, std::uint64_t bytes) {
  return {Outcome::violation, head.status, bytes, std::move(detail)};
}

// The verdict on a 200 answer, complete or not.
StreamResult judge(const StreamPlan& plan, const Head& head, const std::string& body, bool complete) {
  Content want = make_content(plan.seed, kind_has_length(plan.kind));
  bool prefix = body.size() <= want.body.size() && want.body.compare(0, body.size(), body) == 0;
  if (complete && kind_cuts(plan.kind)) {
    return violation("complete-looking 200 for a stream the upstream cut", head, body.size());
  }
  if (!prefix) {
    std::size_t at = 0;
    while (at < body.size() && at < want.body.size() && body[at] == want.body[at]) {
      ++at;
    }
    return violation("body differs from the upstream's at byte " + std::to_string(at) + " of " +
                         std::to_string(body.size()),
                     head, body.size());
  }
  if (complete) {
    if (body.size() != want.body.size()) {
      return violation("complete-looking 200 is short", head, body.size());
    }
    return {Outcome::completed, head.status, body.size(), {}};
  }
  if (kind_cuts(plan.kind)) {
    return {Outcome::broken_expected, head.status, body.size(), {}};
  }
  return violation("a healthy stream was cut after " + std::to_string(body.size()) + " bytes", head,
                   body.size());
}

void wait_then_close(int fd, std::uint64_t ms) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(ms));
  if (ms % 2 == 0) {
    close_with_reset(fd);
  } else {
    ::close(fd);
  }
}

} // namespace

StreamResult run_stream(int port, const StreamPlan& plan, int timeout_s) {
  Head head;
  int fd = connect_loopback(port, timeout_s);
  if (fd < 0) {
    return violation("cannot connect to keyshim: " + std::string(std::strerror(errno)), head, 0);
  }
  bool sent = write_all(fd, request_for(plan, port));
  if (plan.hangup == Hangup::waiting || plan.hangup == Hangup::uploading) {
    wait_then_close(fd, plan.hangup_after);
    return {Outcome::hung_up, 0, 0, {}};
  }
  Reader r{fd, {}};
  if (!sent || !read_head(r, head)) {
    ::close(fd);
    return violation(r.timed_out ? "no answer head within the timeout" : "no valid answer head", head, 0);
  }
  std::string body;
  std::uint64_t limit = plan.hangup == Hangup::streaming ? plan.hangup_after : ~0ull;
  bool complete = read_body(r, head, body, limit);
  bool timed_out = r.timed_out;
  if (plan.hangup == Hangup::streaming && !complete && !r.eof) {
    wait_then_close(fd, 0);
    return {Outcome::hung_up, head.status, body.size(), {}};
  }
  ::close(fd);
  if (timed_out) {
    return violation("no progress within " + std::to_string(timeout_s) + " s", head, body.size());
  }
  // An error status, or an error event relayed when every attempt got one
  // (keyshim relays the last upstream error verbatim).
  if (head.status != 200 || (complete && body.rfind("data: {\"error\"", 0) == 0)) {
    return {Outcome::error_status, head.status, body.size(), {}};
  }
  return judge(plan, head, body, complete);
}

} // namespace soak
