#include "relay/socket_send.hpp"

#include <algorithm>
#include <array>
#include <cerrno>

#include <sys/socket.h>
#include <sys/uio.h>

namespace keyshim::relay {
namespace {

constexpr std::size_t k_max_buffers = 8;

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
  ssize_t sent = retry_interrupted(
      [&] { return ::sendmsg(socket.native_handle(), &message, MSG_DONTWAIT | MSG_NOSIGNAL); });
  if (sent >= 0) {
    return static_cast<std::size_t>(sent);
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK) {
    ec = ErrorCode(errno, boost::system::system_category());
  }
  return 0;
}

} // namespace keyshim::relay
