#include "support/http_fake_upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace keyshim::test {
namespace {

bool iequal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Append from `fd` until `buffer` holds at least `n` bytes. False on close.
bool fill_to(int fd, std::string& buffer, std::size_t n) {
  while (buffer.size() < n) {
    char chunk[65536];
    ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) {
      return false;
    }
    buffer.append(chunk, static_cast<std::size_t>(got));
  }
  return true;
}

// Append from `fd` until `needle` appears at or after `from`: its position,
// or npos on close.
std::size_t fill_until(int fd, std::string& buffer, const std::string& needle, std::size_t from) {
  std::size_t at;
  while ((at = buffer.find(needle, from)) == std::string::npos) {
    if (!fill_to(fd, buffer, buffer.size() + 1)) {
      return std::string::npos;
    }
  }
  return at;
}

// Decode the chunked body at the start of `buffer` into `body`, consuming it
// and its trailer section. False on close or a malformed chunk line.
bool read_chunked_body(int fd, std::string& buffer, std::string& body) {
  std::size_t pos = 0;
  while (true) {
    std::size_t eol = fill_until(fd, buffer, "\r\n", pos);
    if (eol == std::string::npos) {
      return false;
    }
    std::string size_line = buffer.substr(pos, eol - pos); // "1a" or "1a;ext=v"
    char* end = nullptr;
    std::size_t size = std::strtoull(size_line.c_str(), &end, 16);
    if (end == size_line.c_str()) {
      return false;
    }
    pos = eol + 2;
    if (size == 0) {
      while (true) { // trailer fields, then an empty line
        std::size_t line_end = fill_until(fd, buffer, "\r\n", pos);
        if (line_end == std::string::npos) {
          return false;
        }
        bool last = line_end == pos;
        pos = line_end + 2;
        if (last) {
          buffer.erase(0, pos);
          return true;
        }
      }
    }
    if (!fill_to(fd, buffer, pos + size + 2)) {
      return false;
    }
    body.append(buffer, pos, size);
    pos += size + 2;
  }
}

// Read one request (head, then a Content-Length or chunked body) from
// `buffer`/`fd`. False on close.
bool read_request(int fd, std::string& buffer, SeenRequest& out) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::size_t head_end;
  while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    char chunk[16384];
    pollfd p{fd, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline || ::poll(&p, 1, 200) < 0) {
      return false;
    }
    if (!(p.revents & POLLIN)) {
      continue;
    }
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      return false;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  std::string head = buffer.substr(0, head_end);
  buffer.erase(0, head_end + 4);
  std::size_t line_end = head.find("\r\n");
  std::string request_line = head.substr(0, line_end);
  std::size_t sp1 = request_line.find(' ');
  std::size_t sp2 = request_line.rfind(' ');
  out.method = request_line.substr(0, sp1);
  out.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  std::size_t content_length = 0;
  bool chunked = false;
  while (pos < head.size()) {
    std::size_t eol = head.find("\r\n", pos);
    std::string line = head.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? head.size() : eol + 2;
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string name = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (iequal(name, "content-length")) {
      content_length = std::stoul(value);
    } else if (iequal(name, "transfer-encoding") && value.find("chunked") != std::string::npos) {
      chunked = true;
    }
    out.headers.emplace_back(name, value);
  }
  if (chunked) {
    return read_chunked_body(fd, buffer, out.body);
  }
  if (!fill_to(fd, buffer, content_length)) {
    return false;
  }
  out.body = buffer.substr(0, content_length);
  buffer.erase(0, content_length);
  return true;
}

std::string status_text(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 401:
    return "Unauthorized";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

} // namespace

std::string SeenRequest::header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (iequal(n, name)) {
      return v;
    }
  }
  return {};
}

bool SeenRequest::has_header(const std::string& name) const {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return iequal(h.first, name); });
}

FakeUpstream::FakeUpstream() {
  m_listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int yes = 1;
  ::setsockopt(m_listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(m_listen_fd, 128) != 0) {
    throw std::runtime_error("fake upstream: cannot bind 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  m_port = ntohs(addr.sin_port);
  m_acceptor = std::thread([this] { accept_loop(); });
}

FakeUpstream::~FakeUpstream() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    m_released = true;
    for (int fd : m_open_fds) {
      ::shutdown(fd, SHUT_RDWR);
    }
    m_changed.notify_all();
  }
  ::shutdown(m_listen_fd, SHUT_RDWR);
  ::close(m_listen_fd);
  m_acceptor.join();
  for (std::thread& worker : m_workers) {
    worker.join();
  }
}

void FakeUpstream::push(Scripted response) {
  std::lock_guard lock(m_mutex);
  m_script.push_back(std::move(response));
}

void FakeUpstream::require_key(std::string header, std::string value) {
  std::lock_guard lock(m_mutex);
  m_key_header = std::move(header);
  m_key_value = std::move(value);
}

void FakeUpstream::release() {
  std::lock_guard lock(m_mutex);
  m_released = true;
  m_changed.notify_all();
}

std::vector<SeenRequest> FakeUpstream::seen() const {
  std::lock_guard lock(m_mutex);
  return m_seen;
}

std::size_t FakeUpstream::request_count() const {
  std::lock_guard lock(m_mutex);
  return m_seen.size();
}

std::size_t FakeUpstream::hangups() const {
  std::lock_guard lock(m_mutex);
  return m_hangups;
}

std::size_t FakeUpstream::connections() const {
  std::lock_guard lock(m_mutex);
  return m_connections;
}

bool FakeUpstream::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(m_mutex);
  return m_changed.wait_for(lock, timeout, [&] { return m_seen.size() >= n; });
}

bool FakeUpstream::wait_for_hangups(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(m_mutex);
  return m_changed.wait_for(lock, timeout, [&] { return m_hangups >= n; });
}

void FakeUpstream::accept_loop() {
  while (true) {
    int fd = ::accept(m_listen_fd, nullptr, nullptr);
    if (fd < 0) {
      return;
    }
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    std::lock_guard lock(m_mutex);
    if (m_stopping) {
      ::close(fd);
      return;
    }
    ++m_connections;
    m_open_fds.push_back(fd);
    m_workers.emplace_back([this, fd] { serve_connection(fd); });
  }
}

void FakeUpstream::note_hangup(std::size_t request_index) {
  std::lock_guard lock(m_mutex);
  ++m_hangups;
  m_seen[request_index].client_hung_up = true;
  m_changed.notify_all();
}

bool FakeUpstream::pause(int fd, std::chrono::milliseconds d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLRDHUP, 0};
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count(), 0, 50)));
    if (n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      return false;
    }
  }
  return true;
}

void FakeUpstream::serve_connection(int fd) {
  std::string buffer;
  while (true) {
    SeenRequest request;
    if (!read_request(fd, buffer, request)) {
      break;
    }
    Scripted script;
    std::size_t index;
    bool head_request = request.method == "HEAD";
    {
      std::lock_guard lock(m_mutex);
      if (!m_key_header.empty() && request.header(m_key_header) != m_key_value) {
        script.status = 401;
        script.headers = {{"Content-Type", "application/json"}};
        script.pieces = {R"({"error":{"type":"authentication_error","message":"invalid api key"}})"};
        script.chunked = false;
      } else if (!m_script.empty()) {
        script = std::move(m_script.front());
        m_script.pop_front();
      } else {
        script.headers = {{"Content-Type", "application/json"}};
        script.pieces = {R"({"ok":true})"};
        script.chunked = false;
      }
      index = m_seen.size();
      m_seen.push_back(std::move(request));
      m_changed.notify_all();
    }
    if (head_request) { // headers as for GET, no body (RFC 9110 §9.3.2)
      script.chunked = false;
      script.head_only = true;
    }
    if (!respond(fd, script, index)) {
      break;
    }
  }
  std::lock_guard lock(m_mutex);
  m_open_fds.erase(std::remove(m_open_fds.begin(), m_open_fds.end(), fd), m_open_fds.end());
  ::close(fd);
}

bool FakeUpstream::hold(int fd) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (true) {
    {
      std::unique_lock lock(m_mutex);
      if (m_changed.wait_for(lock, 20ms, [&] { return m_released; })) {
        return true;
      }
    }
    if (!pause(fd, 1ms) || std::chrono::steady_clock::now() > deadline) {
      return false;
    }
  }
}

void FakeUpstream::cut(int fd, const Scripted& script) {
  if (!script.raw_at_cut.empty()) {
    send_all(fd, script.raw_at_cut);
  }
  if (script.reset_at_cut) {
    linger hard{1, 0}; // RST instead of FIN
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  }
}

bool FakeUpstream::respond(int fd, const Scripted& script, std::size_t index) {
  if ((script.hold_before_head && !hold(fd)) ||
      (script.head_delay.count() > 0 && !pause(fd, script.head_delay))) {
    note_hangup(index);
    return false;
  }
  if (script.reset_before_reply) {
    linger hard{1, 0}; // RST instead of FIN
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    return false;
  }
  std::string head = "HTTP/1.1 " + std::to_string(script.status) + " " + status_text(script.status) + "\r\n";
  for (const auto& [name, value] : script.headers) {
    head += name + ": " + value + "\r\n";
  }
  if (script.chunked) {
    head += "Transfer-Encoding: chunked\r\n\r\n";
  } else {
    std::size_t total = 0;
    for (const std::string& piece : script.pieces) {
      total += piece.size();
    }
    head += "Content-Length: " + std::to_string(total) + "\r\n\r\n";
  }
  if (!send_all(fd, head)) {
    note_hangup(index);
    return false;
  }
  if (script.head_only) {
    return true;
  }
  for (std::size_t i = 0; i < script.pieces.size(); ++i) {
    if (script.cut_after_pieces >= 0 && i == static_cast<std::size_t>(script.cut_after_pieces)) {
      cut(fd, script); // close mid-body
      return false;
    }
    if (i > 0 && script.piece_delay.count() > 0 && !pause(fd, script.piece_delay)) {
      note_hangup(index);
      return false;
    }
    const std::string& piece = script.pieces[i];
    std::string framed = script.chunked ? ([&] {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      return std::string(size) + piece + "\r\n";
    })()
                                        : piece;
    if (!send_all(fd, framed)) {
      note_hangup(index);
      return false;
    }
    if (i == 0 && script.hold_after_first_piece && !hold(fd)) {
      note_hangup(index);
      return false;
    }
  }
  if (script.cut_after_pieces >= 0 &&
      script.pieces.size() <= static_cast<std::size_t>(script.cut_after_pieces)) {
    cut(fd, script);
    return false;
  }
  if (script.chunked && !send_all(fd, "0\r\n\r\n")) {
    note_hangup(index);
    return false;
  }
  return true;
}

} // namespace keyshim::test
