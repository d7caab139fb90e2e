#include "server/client_stream.hpp"

#include "server/request_head.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keyshim::server {
namespace {

constexpr std::size_t k_read_chunk = 16 * 1024;

int to_poll_ms(std::chrono::milliseconds d) {
  return static_cast<int>(std::max<long long>(0, std::min<long long>(d.count(), 1'000'000'000)));
}

void address_of(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

} // namespace

ClientStream::ClientStream(int fd, std::chrono::milliseconds read_timeout,
                           std::chrono::milliseconds write_timeout)
    : m_fd(fd), m_read_timeout(read_timeout), m_write_timeout(write_timeout) {
}

int ClientStream::poll_readable(std::chrono::milliseconds timeout) const {
  pollfd p{m_fd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, to_poll_ms(timeout));
  } while (n < 0 && errno == EINTR);
  if (n < 0 || (n > 0 && (p.revents & (POLLERR | POLLNVAL)))) {
    return -1;
  }
  return n > 0 ? 1 : 0;
}

ssize_t ClientStream::fill() {
  if (m_offset == m_buffer.size()) {
    m_buffer.clear();
    m_offset = 0;
  }
  std::size_t old = m_buffer.size();
  m_buffer.resize(old + k_read_chunk);
  ssize_t n;
  do {
    n = ::recv(m_fd, m_buffer.data() + old, k_read_chunk, 0);
  } while (n < 0 && errno == EINTR);
  m_buffer.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
  return n;
}

bool ClientStream::is_readable() const {
  return m_offset < m_buffer.size() || poll_readable(m_read_timeout) > 0;
}

bool ClientStream::is_writable() const {
  pollfd p{m_fd, POLLOUT, 0};
  int n;
  do {
    n = ::poll(&p, 1, to_poll_ms(m_write_timeout));
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & POLLOUT) && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

void ClientStream::limit_body(std::uint64_t budget) {
  m_budget = budget;
}

ssize_t ClientStream::read(char* ptr, size_t size) {
  if (m_budget == 0) {
    return -1;
  }
  if (m_offset == m_buffer.size()) {
    if (poll_readable(m_read_timeout) <= 0) {
      return -1;
    }
    ssize_t n = fill();
    if (n <= 0) {
      return n;
    }
  }
  std::size_t n = std::min({size, m_buffer.size() - m_offset,
                            static_cast<std::size_t>(std::min<std::uint64_t>(m_budget, SIZE_MAX))});
  std::memcpy(ptr, m_buffer.data() + m_offset, n);
  m_offset += n;
  if (m_budget != UINT64_MAX) {
    m_budget -= n;
  }
  return static_cast<ssize_t>(n);
}

ssize_t ClientStream::write(const char* ptr, size_t size) {
  if (!is_writable()) {
    return -1;
  }
  ssize_t n;
  do {
    n = ::send(m_fd, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

bool ClientStream::write_all(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(data.data(), data.size());
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void ClientStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    address_of(addr, ip, port);
  }
}

void ClientStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    address_of(addr, ip, port);
  }
}

ClientStream::HeadRead ClientStream::read_head(std::size_t limit, std::chrono::milliseconds timeout,
                                               std::string_view& head) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string_view pending(m_buffer.data() + m_offset, m_buffer.size() - m_offset);
    // Tolerate blank lines before a request line (RFC 9112 §2.2).
    while (!pending.empty() && (pending.front() == '\r' || pending.front() == '\n')) {
      pending.remove_prefix(1);
      ++m_offset;
    }
    std::size_t end = find_head_end(pending);
    if (end != std::string_view::npos) {
      head = pending.substr(0, end);
      return end > limit ? HeadRead::too_large : HeadRead::complete;
    }
    if (pending.size() > limit) {
      return HeadRead::too_large;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return HeadRead::timeout;
    }
    int ready = poll_readable(left);
    if (ready == 0) {
      return HeadRead::timeout;
    }
    if (ready < 0 || fill() <= 0) {
      return HeadRead::closed;
    }
  }
}

bool ClientStream::peer_closed() const {
  pollfd p{m_fd, POLLRDHUP, 0};
  int n = ::poll(&p, 1, 0);
  return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

} // namespace keyshim::server
