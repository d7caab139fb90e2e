#include "support/http_raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

namespace keyshim::test {

RawConnection::RawConnection(int port, const std::string& host) {
  bool v6 = host.find(':') != std::string::npos;
  m_fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  int rc;
  if (v6) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, host.c_str(), &addr.sin6_addr);
    rc = ::connect(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    rc = ::connect(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  if (rc != 0) {
    throw std::runtime_error("raw client: connect failed");
  }
}

RawConnection::~RawConnection() {
  close();
}

void RawConnection::close() {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

bool RawConnection::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(m_fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

// One read with a deadline: >0 bytes, 0 closed, -1 timeout/error.
ssize_t read_some(int fd, std::string& into, std::chrono::steady_clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) {
    return -1;
  }
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
    return -1;
  }
  char buf[65536];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n > 0) {
    into.append(buf, static_cast<std::size_t>(n));
  }
  return n < 0 ? 0 : n; // a reset counts as closed
}

} // namespace

bool RawConnection::read_until(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (m_received.find(needle) == std::string::npos) {
    if (read_some(m_fd, m_received, deadline) <= 0) {
      return m_received.find(needle) != std::string::npos;
    }
  }
  return true;
}

bool RawConnection::read_to_close(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ssize_t n = read_some(m_fd, m_received, deadline);
    if (n == 0) {
      return true;
    }
    if (n < 0) {
      return false;
    }
  }
}

bool RawConnection::read_response(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!parse_response(m_received).complete) {
    if (read_some(m_fd, m_received, deadline) <= 0) {
      return parse_response(m_received).complete;
    }
  }
  return true;
}

bool RawConnection::read_more(std::chrono::milliseconds timeout) {
  return read_some(m_fd, m_received, std::chrono::steady_clock::now() + timeout) > 0;
}

std::string RawResponse::header(const std::string& name) const {
  std::string lower_head = head;
  std::string lower_name = name;
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(lower_head);
  lower(lower_name);
  std::size_t at = lower_head.find("\r\n" + lower_name + ":");
  if (at == std::string::npos) {
    return {};
  }
  std::size_t start = at + 3 + name.size();
  std::size_t end = head.find("\r\n", start);
  std::string value = head.substr(start, end - start);
  value.erase(0, value.find_first_not_of(' '));
  return value;
}

namespace {

// Binds 127.0.0.1:`port` (0: the kernel chooses) and lets go: the port
// bound, or 0.
int bind_and_release(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  int bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  ::close(fd);
  return bound;
}

// The first port of the kernel's ephemeral range (32768 when unreadable).
int ephemeral_low() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  range >> low;
  return low;
}

} // namespace

int unused_loopback_port() {
  constexpr int k_span = 10000; // ports below the ephemeral range to choose from
  constexpr int k_tries = 64;
  const int low = ephemeral_low() - k_span;
  if (low >= 1024) {
    thread_local std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> pick(low, low + k_span - 1);
    for (int i = 0; i < k_tries; ++i) {
      if (int port = bind_and_release(pick(random))) {
        return port;
      }
    }
  }
  return bind_and_release(0);
}

RawResponse parse_response(const std::string& bytes) {
  RawResponse r;
  std::size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos || bytes.compare(0, 5, "HTTP/") != 0) {
    return r;
  }
  r.head = bytes.substr(0, head_end);
  r.status = std::stoi(bytes.substr(9, 3));
  std::size_t pos = head_end + 4;
  std::string te = r.header("Transfer-Encoding");
  if (te.find("chunked") != std::string::npos) {
    r.chunked = true;
    while (pos < bytes.size()) {
      std::size_t line_end = bytes.find("\r\n", pos);
      if (line_end == std::string::npos) {
        return r;
      }
      std::size_t size = std::stoul(bytes.substr(pos, line_end - pos), nullptr, 16);
      pos = line_end + 2;
      if (size == 0) {
        r.complete = bytes.compare(pos, 2, "\r\n") == 0;
        return r;
      }
      if (pos + size + 2 > bytes.size()) {
        r.body += bytes.substr(pos);
        return r;
      }
      r.body += bytes.substr(pos, size);
      pos += size + 2;
    }
    return r;
  }
  std::string length = r.header("Content-Length");
  std::size_t n = length.empty() ? bytes.size() - pos : std::stoul(length);
  r.body = bytes.substr(pos, n);
  r.complete = r.body.size() == n;
  return r;
}

std::string make_request(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& extra_headers) {
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers;
  if (!body.empty() || method == "POST") {
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return request + "\r\n" + body;
}

bool wait_for_health(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(0, 200'000);
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (client.Get("/health")) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

} // namespace keyshim::test
