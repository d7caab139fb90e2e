// One soak stream: see soak_stream.hpp.
#include "soak_stream.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
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
  bool retry_after = false;
  std::string key_id;     // X-Soak-Key: the key the upstream got
  std::int64_t at_ns = 0; // X-Soak-At: when (steady clock)
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
    } else if (l.rfind("retry-after:", 0) == 0) {
      head.retry_after = true;
    } else if (l.rfind("x-soak-key:", 0) == 0) {
      head.key_id = l.substr(l.find_first_not_of(' ', 11));
    } else if (l.rfind("x-soak-at:", 0) == 0) {
      head.at_ns = std::strtoll(l.c_str() + 10, nullptr, 10);
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

namespace {

// The waiting room's and the reloads' checks on an answer: keyshim's own 503
// carries Retry-After and, for a request no fault delays, comes by max_wait
// plus slack; no answer comes from a key retired before it was served.
StreamResult check_answer(const StreamPlan& plan, const Head& head, const std::string& body,
                          std::chrono::steady_clock::time_point started,
                          std::chrono::steady_clock::duration took, KeyBook& keys) {
  bool healthy = plan.kind == Kind::sse || plan.kind == Kind::json;
  StreamResult r{Outcome::error_status, head.status, body.size(), {}};
  r.wait_503 = head.status == 503 && body.find("soak fault") == std::string::npos;
  r.waited = healthy && took > k_waited;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  if (r.wait_503 && !head.retry_after) {
    return violation("keyshim's 503 without Retry-After", head, body.size());
  }
  if (r.wait_503 && healthy && took > std::chrono::seconds(k_max_wait_s) + k_wait_slack) {
    return violation("keyshim's 503 after " + std::to_string(ms) + " ms (max_wait " +
                         std::to_string(k_max_wait_s) + " s)",
                     head, body.size());
  }
  // A request in flight at a reload may finish on the old keys; one sent
  // after it, or one served at its only attempt after it (so it was
  // waiting, not in flight), may not.
  std::int64_t sent_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count();
  if (!head.key_id.empty() && keys.retired_before(head.key_id, healthy ? head.at_ns : sent_ns)) {
    return violation("served by key " + head.key_id + " after the reload that dropped it", head, body.size());
  }
  return r;
}

StreamResult with_waits(StreamResult r, const StreamResult& checked) {
  r.waited = checked.waited;
  r.wait_503 = checked.wait_503;
  return r;
}

} // namespace

StreamResult run_stream(int port, const StreamPlan& plan, int timeout_s, KeyBook& keys) {
  if (plan.kind == Kind::ws) {
    return run_ws(port, plan, timeout_s, keys);
  }
  Head head;
  auto started = std::chrono::steady_clock::now();
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
  auto took = std::chrono::steady_clock::now() - started; // to the answer's head
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
  StreamResult checked = check_answer(plan, head, body, started, took, keys);
  if (checked.outcome == Outcome::violation) {
    return checked;
  }
  // An error status, or an error event relayed when every attempt got one
  // (keyshim relays the last upstream error verbatim).
  if (head.status != 200 || (complete && body.rfind("data: {\"error\"", 0) == 0)) {
    return checked;
  }
  return with_waits(judge(plan, head, body, complete), checked);
}

} // namespace soak
