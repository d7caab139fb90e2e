#pragma once
// The client connection as httplib's request parser sees it. Replaces
// httplib's per-request SocketStream so that keyshim can (1) hold a head
// gate in front of the parser (size, time and framing limits httplib lacks),
// (2) keep pipelined bytes across requests, and (3) tell whether the client
// has hung up while the relay is still waiting for the upstream.
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace keyshim::server {

class ClientStream final : public httplib::Stream {
public:
  ClientStream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return m_fd; }

  enum class Wait { ready, closed, timeout, stopped };
  // Wait up to `timeout` for the next request's first byte, giving up early
  // when `stop()` turns true (checked every 100 ms).
  template <typename StopFn> Wait wait_for_request(std::chrono::milliseconds timeout, StopFn stop);

  // Buffer until the head (through its blank line) is complete. Returns the
  // head, or why not: closed, timeout, or too large (more than `limit` bytes).
  enum class HeadRead { complete, closed, timeout, too_large };
  HeadRead read_head(std::size_t limit, std::chrono::milliseconds timeout, std::string_view& head);

  // Bound what the request after the current head may read: httplib checks
  // max_request_body for declared lengths but not for chunked bodies, which
  // it would buffer without limit. Reads past the budget fail.
  void limit_body(std::uint64_t budget);

  // True when the peer has closed or reset the connection. Never blocks.
  bool peer_closed() const;

  // Write everything or fail.
  bool write_all(std::string_view data);

private:
  // Wait for readability up to `timeout`: 1 readable, 0 timeout, -1 error/hangup.
  int poll_readable(std::chrono::milliseconds timeout) const;
  // Receive more bytes into the buffer: bytes read, 0 on close, -1 on error.
  ssize_t fill();

  int m_fd;
  std::chrono::milliseconds m_read_timeout;
  std::chrono::milliseconds m_write_timeout;
  std::string m_buffer;
  std::size_t m_offset = 0;
  std::uint64_t m_budget = UINT64_MAX; // bytes read() may still return
};

template <typename StopFn>
ClientStream::Wait ClientStream::wait_for_request(std::chrono::milliseconds timeout, StopFn stop) {
  if (m_offset < m_buffer.size()) {
    return Wait::ready; // a pipelined request is already here
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (stop()) {
      return Wait::stopped;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Wait::timeout;
    }
    int ready = poll_readable(std::min(left, std::chrono::milliseconds(100)));
    if (ready < 0) {
      return Wait::closed;
    }
    if (ready > 0) {
      return fill() > 0 ? Wait::ready : Wait::closed;
    }
  }
}

} // namespace keyshim::server
