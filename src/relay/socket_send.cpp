#include "relay/socket_send.hpp"

#include <algorithm>
#include <array>
#include <cerrno>

#include <sys/socket.h>
#include <sys/uio.h>

namespace keyshim::relay {
namespace {

constexpr std::size_t k_max_buffers = 8;
// Interrupted calls are tried again, a bounded number of times (sends and receives).
constexpr int k_send_retries = 8;

} // namespace

std::size_t send_without_waiting(Socket& socket, std::span<const asio::const_buffer> buffers, ErrorCode& ec) {
  std::array<iovec, k_max_buffers> pieces{};
  std::size_t count = std::min(buffers.size(), k_max_buffers);
  for (std::size_t i = 0; i < count; ++i) {
    pieces[i].iov_base = const_cast<void*>(buffers[i].data());
    pieces[i].iov_len = buffers[i].size();
  }
  msghdr message{};
  message.msg_iov = pieces.data();
  message.msg_iovlen = count;
  ec = {};
  for (int tries = 0; tries < k_send_retries; ++tries) {
    ssize_t sent = ::sendmsg(socket.native_handle(), &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent >= 0) {
      return static_cast<std::size_t>(sent);
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return 0;
    }
    if (errno != EINTR) {
      break;
    }
  }
  ec = ErrorCode(errno, boost::system::system_category());
  return 0;
}

std::size_t receive_without_waiting(Socket& socket, asio::mutable_buffer into, ErrorCode& ec) {
  ec = {};
  for (int tries = 0; tries < k_send_retries; ++tries) {
    ssize_t got = ::recv(socket.native_handle(), into.data(), into.size(), MSG_DONTWAIT);
    if (got > 0) {
      return static_cast<std::size_t>(got);
    }
    if (got == 0) {
      ec = asio::error::eof;
      return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ec = asio::error::would_block;
      return 0;
    }
    if (errno != EINTR) {
      break;
    }
  }
  ec = ErrorCode(errno, boost::system::system_category());
  return 0;
}

} // namespace keyshim::relay
