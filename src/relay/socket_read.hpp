#pragma once
// Reads that skip the recv bound to fail, as nginx's do.
//
// Asio 1.74 tries every read at once (its "speculative" recv) and waits for
// the socket only when that finds nothing. A keep-alive request makes two
// reads bound to find nothing: the upstream's answer right after the request
// went, and the client's next request right after the answer went. Each
// costs a recvfrom that fails with EAGAIN (about 0.35 µs of system time
// here; issue 19's c=16 rows). Waiting for readiness instead (async_wait)
// costs an epoll_ctl per wait, which is worse.
//
// Asio's reactor skips that recv when the last read "exhausted" the socket,
// until the loop reports the socket readable again; its own reads say so
// only at the end of the stream. The reads here say so whenever the socket
// is left empty, which TCP_INQ tells: with it, each recvmsg reports how many
// bytes remain, and a received FIN counts as one, so "nothing remains" is
// exact. (A short read alone would not do: data and the FIN that follows it
// come out of separate reads, and on an edge-triggered socket a FIN whose
// readiness was already reported would never be reported again.)
//
// The skipping needs Boost 1.74's epoll reactor (Debian 12's), whose
// internals it uses. With any other Boost the reads are Asio's own: a recv
// more per read, never a wrong one. Event-loop thread only.
#include "relay/beast.hpp"

#include <boost/version.hpp>

#include <cstddef>
#include <utility>

#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING)
#define KEYSHIM_READ_HINTS 1
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/memory.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#endif

namespace keyshim::relay {

// Turns on the hint on a socket (TCP_INQ); a listening socket's connections
// inherit it. Without it, reads are tried at once as Asio does.
void enable_read_hints(int fd) noexcept;

// Whether a recv on `socket` may find anything: false after a read left it
// empty, until the loop reports it readable (or closed) again.
bool may_hold_bytes(const Socket& socket) noexcept;

// Marks `socket` as holding nothing. Only right after it was registered with
// the loop (an accepted socket, before any poll): what arrived before its
// registration is reported by the next poll.
void mark_emptied(Socket& socket) noexcept;

// The bytes `socket` holds now, up to `into`'s size, without waiting: 0 with
// `ec` clear when it holds none (a socket marked empty is not asked);
// asio::error::eof at the end of the stream. A read that leaves the socket
// empty marks it so.
std::size_t read_without_waiting(Socket& socket, asio::mutable_buffer into, ErrorCode& ec);

namespace read_detail {

// What one recvmsg found: nothing yet (EAGAIN); bytes or an error, with
// more left or an unknown amount; or the socket left empty (or its end).
enum class Found { nothing, more, emptied };

// One recvmsg into `into`, `n` bytes, with TCP_INQ's count of what is left.
Found receive(int fd, asio::mutable_buffer into, ErrorCode& ec, std::size_t& n) noexcept;

#ifdef KEYSHIM_READ_HINTS
using Status = asio::detail::reactor_op::status;

// Queues `op` as a read of `socket` with Asio's reactor.
void start(Socket& socket, asio::detail::reactor_op* op);

// Asio's receive operation (reactive_socket_recv_op) with receive() as the
// system call. `Handler` is the name Asio's handler-pointer macro expects.
template <class Handler> class ReadOp : public asio::detail::reactor_op {
public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(ReadOp);

  ReadOp(int fd, asio::mutable_buffer into, Handler& handler, const Executor& ex)
      : reactor_op(ErrorCode(), &ReadOp::do_perform, &ReadOp::do_complete), m_fd(fd), m_into(into),
        m_handler(std::move(handler)), m_work(m_handler, ex) {}

  // Asio's reactor skips the next read's recv after done_and_exhausted.
  static Status do_perform(reactor_op* base) {
    auto* op = static_cast<ReadOp*>(base);
    switch (receive(op->m_fd, op->m_into, op->ec_, op->bytes_transferred_)) {
    case Found::nothing:
      return Status::not_done;
    case Found::more:
      return Status::done;
    case Found::emptied:
      break;
    }
    return Status::done_and_exhausted;
  }

  // As Asio's: the operation's memory goes back before the handler runs.
  static void do_complete(void* owner, asio::detail::operation* base, const ErrorCode&, std::size_t) {
    auto* op = static_cast<ReadOp*>(base);
    ptr p = {asio::detail::addressof(op->m_handler), op, op};
    asio::detail::handler_work<Handler, Executor> work(std::move(op->m_work));
    asio::detail::binder2<Handler, ErrorCode, std::size_t> handler(op->m_handler, op->ec_,
                                                                   op->bytes_transferred_);
    p.h = asio::detail::addressof(handler.handler_);
    p.reset();
    if (owner) {
      asio::detail::fenced_block fence(asio::detail::fenced_block::half);
      work.complete(handler, handler.handler_);
    }
  }

private:
  int m_fd;
  asio::mutable_buffer m_into;
  Handler m_handler;
  asio::detail::handler_work<Handler, Executor> m_work;
};
#endif

} // namespace read_detail

// As socket.async_read_some(into, handler), but a read that leaves the
// socket empty makes the next one wait for the loop's report instead of
// trying a recv first.
template <class Handler> void read_some(Socket& socket, asio::mutable_buffer into, Handler handler) {
#ifdef KEYSHIM_READ_HINTS
  using Op = read_detail::ReadOp<Handler>;
  typename Op::ptr p = {asio::detail::addressof(handler), Op::ptr::allocate(handler), nullptr};
  p.p = new (p.v) Op(socket.native_handle(), into, handler, socket.get_executor());
  read_detail::start(socket, p.p);
  p.v = p.p = nullptr;
#else
  socket.async_read_some(into, std::move(handler));
#endif
}

} // namespace keyshim::relay
