#pragma once
// A client connection without a network: socketpair(AF_UNIX, SOCK_STREAM)
// gives two connected ends in this process, no port and no loopback. One end
// is assigned into the relay's tcp Socket (stream sockets behave alike for
// what the relay does: async reads and writes, readability waits, a peek),
// the test plays the client on the other with non-blocking reads and
// writes, and io_context::poll() runs the handlers that are ready: nothing
// waits for real time. Header-only: it needs relay/beast.hpp, which
// keyshim_test_support does not link.
#include "relay/beast.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace keyshim::test {

class SocketPair {
public:
  explicit SocketPair(relay::asio::io_context& ioc) : m_ioc(ioc), near(ioc.get_executor()) {
    int fds[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      ADD_FAILURE() << "socketpair: " << errno;
      return;
    }
    relay::ErrorCode ec;
    near.assign(relay::tcp::v4(), fds[0], ec);
    EXPECT_FALSE(ec) << ec.message();
    m_far = fds[1];
  }
  ~SocketPair() { close_far(); }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;

  // Run every handler that is ready now (never waits).
  void settle() {
    for (int round = 0; round < 16; ++round) { // a completion may make another ready
      m_ioc.restart();
      if (m_ioc.poll() == 0) {
        return;
      }
    }
  }
  // What the near end has written since the last read() (all of it is
  // also in `received`).
  std::string read() {
    settle();
    std::string bytes;
    char buffer[16 * 1024];
    for (;;) { // ends at EAGAIN (nothing more now) or 0 (the near end closed)
      ssize_t n = ::recv(m_far, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n <= 0) {
        m_closed = m_closed || n == 0;
        received += bytes;
        return bytes;
      }
      bytes.append(buffer, static_cast<std::size_t>(n));
    }
  }
  // Whether the near end has closed (its FIN was read, after its bytes).
  bool closed() {
    read();
    return m_closed;
  }
  // The client sends `bytes`.
  void write(std::string_view bytes) {
    ASSERT_EQ(::send(m_far, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
    settle();
  }
  // The client hangs up.
  void close_far() {
    if (m_far >= 0) {
      ::close(m_far);
      m_far = -1;
    }
  }

private:
  relay::asio::io_context& m_ioc;
  int m_far = -1;
  bool m_closed = false;

public:
  relay::Socket near;   // the relay's end
  std::string received; // everything read() has read
};

} // namespace keyshim::test
