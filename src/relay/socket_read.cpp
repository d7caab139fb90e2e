#include "relay/socket_read.hpp"

#include "relay/socket_send.hpp"

#include <cerrno>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace keyshim::relay {
namespace {

#ifdef KEYSHIM_READ_HINTS
using Reactor = asio::detail::epoll_reactor;
using DescriptorState = Reactor::descriptor_state;
using SpeculativeFlags = bool (DescriptorState::*)[Reactor::max_ops];

// Whether the reactor tries a socket's next read at once is its per-socket
// flag, private to Asio. An explicit instantiation may name a private member
// (C++20 [temp.spec] paragraph 6); the member pointer comes out through a
// friend.
SpeculativeFlags speculative_flags();
template <SpeculativeFlags Member> struct ExposeSpeculative {
  friend SpeculativeFlags speculative_flags() { return Member; }
};
template struct ExposeSpeculative<&DescriptorState::try_speculative_>;

// basic_socket's implementation is protected: a derived class may name it.
struct SocketState : Socket {
  static const auto& of(const Socket& socket) { return (socket.*(&SocketState::impl_)).get_implementation(); }
  static auto& of(Socket& socket) { return (socket.*(&SocketState::impl_)).get_implementation(); }
};

// The loop's reactor, looked up once per thread (each loop runs on one).
Reactor& reactor_of(Socket& socket) {
  thread_local asio::execution_context* context = nullptr;
  thread_local Reactor* reactor = nullptr;
  asio::execution_context& wanted = asio::query(socket.get_executor(), asio::execution::context);
  if (context != &wanted) {
    reactor = &asio::use_service<Reactor>(wanted);
    context = &wanted;
  }
  return *reactor;
}
#endif

} // namespace

void enable_read_hints(int fd) noexcept {
  int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_INQ, &on, sizeof on); // not TCP (a test's pipe): no hint, no harm
}

bool may_hold_bytes(const Socket& socket) noexcept {
#ifdef KEYSHIM_READ_HINTS
  DescriptorState* state = SocketState::of(socket).reactor_data_;
  return state == nullptr || (state->*speculative_flags())[Reactor::read_op];
#else
  (void)socket;
  return true;
#endif
}

void mark_emptied(Socket& socket) noexcept {
#ifdef KEYSHIM_READ_HINTS
  if (DescriptorState* state = SocketState::of(socket).reactor_data_) {
    (state->*speculative_flags())[Reactor::read_op] = false;
  }
#else
  (void)socket;
#endif
}

namespace read_detail {

Found receive(int fd, asio::mutable_buffer into, ErrorCode& ec, std::size_t& n) noexcept {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec piece{into.data(), into.size()};
  msghdr message{};
  message.msg_iov = &piece;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t got = retry_interrupted([&] { return ::recvmsg(fd, &message, MSG_DONTWAIT); });
  n = 0;
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Found::nothing;
    }
    ec = ErrorCode(errno, boost::system::system_category());
    return Found::more;
  }
  if (got == 0 && into.size() != 0) {
    ec = asio::error::eof; // as Asio's reads: the end of the stream exhausts the socket
    return Found::emptied;
  }
  n = static_cast<std::size_t>(got);
  for (cmsghdr* field = CMSG_FIRSTHDR(&message); field; field = CMSG_NXTHDR(&message, field)) {
    if (field->cmsg_level == SOL_TCP && field->cmsg_type == TCP_CM_INQ) {
      int left = 0;
      std::memcpy(&left, CMSG_DATA(field), sizeof left);
      return left == 0 ? Found::emptied : Found::more;
    }
  }
  return Found::more; // no hint on this socket: what is left is unknown
}

#ifdef KEYSHIM_READ_HINTS
void start(Socket& socket, asio::detail::reactor_op* op) {
  auto& impl = SocketState::of(socket);
  reactor_of(socket).start_op(Reactor::read_op, impl.socket_, impl.reactor_data_, op, false, true);
}
#endif

} // namespace read_detail

std::size_t read_without_waiting(Socket& socket, asio::mutable_buffer into, ErrorCode& ec) {
  ec = {};
  if (!may_hold_bytes(socket)) {
    return 0;
  }
  std::size_t n = 0;
  read_detail::Found found = read_detail::receive(socket.native_handle(), into, ec, n);
  // Not at the end of the stream: a later read must meet it again, not wait.
  if (found == read_detail::Found::nothing || (found == read_detail::Found::emptied && !ec)) {
    mark_emptied(socket);
  }
  return n;
}

} // namespace keyshim::relay
