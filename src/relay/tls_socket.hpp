#pragma once
// A TLS client stream that runs OpenSSL on the socket itself, as nginx does:
// SSL_read and SSL_write call recv and send through a small BIO, and when
// OpenSSL wants the network the operation waits for the socket to be
// readable or writable and tries again. Asio's ssl::stream puts a BIO pair
// between OpenSSL and the socket instead: every record is copied through
// it, and its engine adds about a fifth to the instructions of a keep-alive
// request through an HTTPS upstream (callgrind, issue 19).
//
// It is an AsyncReadStream and AsyncWriteStream for Beast, and keeps Asio's
// error codes: asio::error::eof after the peer's close_notify,
// ssl::error::stream_truncated for an end of stream without one, the socket's
// own error (connection_reset, broken_pipe) when the socket fails, and
// operation_aborted when it is closed during a wait. One read and one write
// may be pending at once. Event-loop thread only.
#include "relay/beast.hpp"

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include <memory>

namespace keyshim::relay {

// What the socket BIO saw during the last OpenSSL call.
struct TlsSocketIo {
  Socket* socket;
  int error = 0;    // errno of a failed recv or send
  bool eof = false; // recv found the end of the stream
};

class TlsSocket {
public:
  using executor_type = Executor;

  TlsSocket(Executor ex, ssl::context& context);
  ~TlsSocket();
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  executor_type get_executor() { return m_socket.get_executor(); }
  Socket& next_layer() { return m_socket; }
  SSL* native_handle() { return m_ssl; }

  // The client handshake, on the connected socket. Set the host name checks
  // on native_handle() first.
  template <class Token> auto async_handshake(Token&& token) {
    attach();
    return start(Kind::handshake, nullptr, 0, std::forward<Token>(token));
  }
  // Reads into the first non-empty buffer, as Asio's ssl::stream does.
  template <class Buffers, class Token> auto async_read_some(const Buffers& buffers, Token&& token) {
    asio::mutable_buffer into = first_of<asio::mutable_buffer>(buffers);
    return start(Kind::read, into.data(), into.size(), std::forward<Token>(token));
  }
  // Writes the buffers as one record where they fit in one (a request's head
  // and body), else the first one.
  template <class Buffers, class Token> auto async_write_some(const Buffers& buffers, Token&& token) {
    asio::const_buffer from = record_of(buffers);
    return start(Kind::write, const_cast<void*>(from.data()), from.size(), std::forward<Token>(token));
  }
  // As much of `buffers` as goes out without waiting: one record, or
  // nothing when the socket is full (an async_write_some of the same
  // buffers then sends the very same record, as OpenSSL requires).
  template <class Buffers> std::size_t write_now(const Buffers& buffers, ErrorCode& ec) {
    asio::const_buffer from = record_of(buffers);
    std::size_t n = 0;
    if (from.size() == 0 ||
        step(Kind::write, const_cast<void*>(from.data()), from.size(), n, ec) != Step::done) {
      return 0;
    }
    return n;
  }
  // Sends close_notify, and completes once it is sent: the peer's own
  // close_notify, if it comes, ends a later read with eof.
  template <class Token> auto async_shutdown(Token&& token) {
    return start(Kind::shutdown, nullptr, 0, std::forward<Token>(token));
  }

  // Decrypts what has already been received into `into`, without waiting;
  // the bytes decrypted (0 when no record is buffered).
  std::size_t read_received(asio::mutable_buffer into);

private:
  static constexpr std::size_t k_record_bytes = 16 * 1024; // RFC 8446 section 5.1

  enum class Kind { handshake, read, write, shutdown };
  enum class Step { done, want_read, want_write };
  template <class Handler> class Op;

  void attach();
  // One OpenSSL call for `kind`: done (with `ec` and the bytes moved in `n`)
  // or the direction it waits for.
  Step step(Kind kind, void* data, std::size_t size, std::size_t& n, ErrorCode& ec);
  ErrorCode error_of(int ssl_error) const;
  asio::mutable_buffer gather_space();
  asio::const_buffer gather(std::size_t bytes) const { return asio::buffer(m_gather.get(), bytes); }

  // What one write sends of `buffers`: joined into one record where the
  // first is short and others follow, else the first.
  template <class Buffers> asio::const_buffer record_of(const Buffers& buffers) {
    asio::const_buffer from = first_of<asio::const_buffer>(buffers);
    if (from.size() < k_record_bytes && from.size() < asio::buffer_size(buffers)) {
      from = gather(asio::buffer_copy(gather_space(), buffers));
    }
    return from;
  }
  template <class Buffer, class Buffers> static Buffer first_of(const Buffers& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
      Buffer buffer(*it);
      if (buffer.size() != 0) {
        return buffer;
      }
    }
    return Buffer();
  }

  template <class Token> auto start(Kind kind, void* data, std::size_t size, Token&& token) {
    return asio::async_initiate<Token, void(ErrorCode, std::size_t)>(
        [this, kind, data, size](auto handler) {
          Op<decltype(handler)>(*this, kind, data, size, std::move(handler)).begin();
        },
        token);
  }

  Socket m_socket;
  SSL* m_ssl;
  TlsSocketIo m_io;
  char m_peeked = 0;                // where a read's wait peeks; the byte stays in the socket
  std::unique_ptr<char[]> m_gather; // made at the first write that needs it
};

// One operation: a step now, then a step after each wait the step asks for.
template <class Handler> class TlsSocket::Op {
public:
  using executor_type = asio::associated_executor_t<Handler, Executor>;
  using allocator_type = asio::associated_allocator_t<Handler>;

  Op(TlsSocket& socket, Kind kind, void* data, std::size_t size, Handler handler)
      : m_socket(&socket), m_kind(kind), m_data(data), m_size(size), m_handler(std::move(handler)) {}

  executor_type get_executor() const noexcept {
    return asio::get_associated_executor(m_handler, m_socket->get_executor());
  }
  allocator_type get_allocator() const noexcept { return asio::get_associated_allocator(m_handler); }

  // Never completes inside the initiating call: a result at once is posted.
  void begin() {
    ErrorCode ec;
    std::size_t n = 0;
    bool empty = m_size == 0 && (m_kind == Kind::read || m_kind == Kind::write);
    Step step = empty ? Step::done : m_socket->step(m_kind, m_data, m_size, n, ec);
    if (step == Step::done) {
      executor_type ex = get_executor();
      asio::post(ex, beast::bind_front_handler(std::move(m_handler), ec, n));
      return;
    }
    wait(step);
  }

  // The peek found a byte, the end of the stream or an error: the step's
  // own read meets the same and reports it. Only a cancelled wait ends here.
  void operator()(const ErrorCode& peek_error, std::size_t) {
    (*this)(peek_error == asio::error::operation_aborted ? peek_error : ErrorCode());
  }

  // The socket is ready, or the wait failed (closed: operation_aborted).
  void operator()(const ErrorCode& wait_error) {
    if (wait_error) {
      m_handler(wait_error, std::size_t{0});
      return;
    }
    ErrorCode ec;
    std::size_t n = 0;
    Step step = m_socket->step(m_kind, m_data, m_size, n, ec);
    if (step == Step::done) {
      m_handler(ec, n);
      return;
    }
    wait(step);
  }

private:
  // A read waits with a receive that peeks one byte: the socket was emptied
  // (the BIO's read said so), and Asio then queues the receive without a
  // system call, where a wait for readability re-arms the socket with
  // epoll_ctl every time. A write waits for writability, rarely.
  void wait(Step step) {
    Socket& socket = m_socket->m_socket;
    if (step == Step::want_read) {
      socket.async_receive(asio::buffer(&m_socket->m_peeked, 1), Socket::message_peek, std::move(*this));
    } else {
      socket.async_wait(Socket::wait_write, std::move(*this));
    }
  }

  TlsSocket* m_socket;
  Kind m_kind;
  void* m_data;
  std::size_t m_size;
  Handler m_handler;
};

} // namespace keyshim::relay
