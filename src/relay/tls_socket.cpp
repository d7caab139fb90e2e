#include "relay/tls_socket.hpp"

#include "relay/socket_read.hpp"
#include "relay/socket_send.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <new>

#include <sys/socket.h>

namespace keyshim::relay {
namespace {

TlsSocketIo& io_of(BIO* bio) {
  return *static_cast<TlsSocketIo*>(BIO_get_data(bio));
}

// The BIO between OpenSSL and the socket: recv and send on the socket's
// descriptor as it is at the call (once closed, EBADF, never another
// connection's descriptor), and send without SIGPIPE. A socket that the last
// read emptied is not read again until the loop reports it readable
// (relay/socket_read.hpp): OpenSSL hears "retry" without a system call.
int bio_read(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  TlsSocketIo& io = io_of(bio);
  ErrorCode ec;
  std::size_t n = read_without_waiting(*io.socket, asio::buffer(data, static_cast<std::size_t>(size)), ec);
  if (n == 0 && !ec) {
    BIO_set_retry_read(bio);
    return -1;
  }
  io.eof = ec == asio::error::eof;
  if (ec && !io.eof) {
    io.error = ec.value();
    return -1;
  }
  return static_cast<int>(n);
}

int bio_write(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  TlsSocketIo& io = io_of(bio);
  ssize_t n = retry_interrupted(
      [&] { return ::send(io.socket->native_handle(), data, static_cast<std::size_t>(size), MSG_NOSIGNAL); });
  if (n >= 0) {
    return static_cast<int>(n);
  }
  // A full socket is OpenSSL's "retry"; anything else the socket's error,
  // kept for the operation's error code.
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    BIO_set_retry_write(bio);
  } else {
    io.error = errno;
  }
  return -1;
}

long bio_control(BIO* bio, int command, long, void*) {
  switch (command) {
  case BIO_CTRL_FLUSH:
    return 1; // nothing is buffered here
  case BIO_CTRL_EOF:
    return io_of(bio).eof ? 1 : 0;
  default:
    return 0;
  }
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// Made once and kept for the life of the process.
const BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "keyshim socket");
    if (m) {
      BIO_meth_set_write(m, &bio_write);
      BIO_meth_set_read(m, &bio_read);
      BIO_meth_set_ctrl(m, &bio_control);
      BIO_meth_set_create(m, &bio_create);
    }
    return m;
  }();
  return method;
}

void throw_ssl_error(const char* what) {
  ErrorCode ec(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
  ERR_clear_error();
  throw boost::system::system_error(ec, what);
}

} // namespace

// The modes Asio's engine sets, plus read-ahead: a recv takes whatever has
// arrived (up to a record's buffer), not a record's header and then its body.
TlsSocket::TlsSocket(Executor ex, ssl::context& context)
    : m_socket(ex), m_ssl(SSL_new(context.native_handle())), m_io{&m_socket} {
  if (!m_ssl) {
    throw_ssl_error("SSL_new");
  }
  SSL_set_mode(m_ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                          SSL_MODE_RELEASE_BUFFERS);
  SSL_set_read_ahead(m_ssl, 1);
  const BIO_METHOD* method = socket_bio_method();
  BIO* bio = method ? BIO_new(method) : nullptr;
  if (!bio) {
    SSL_free(m_ssl);
    throw_ssl_error("BIO_new");
  }
  BIO_set_data(bio, &m_io);
  SSL_set_bio(m_ssl, bio, bio);
}

TlsSocket::~TlsSocket() {
  SSL_free(m_ssl); // and its BIO
}

void TlsSocket::attach() {
  ErrorCode ignored;
  m_socket.native_non_blocking(true, ignored);
  SSL_set_connect_state(m_ssl);
}

// SSL_get_error needs the thread's error queue empty before the call. Every
// failure here leaves it empty, so it is cleared only when something else
// left an error behind: ERR_clear_error walks the whole queue, about 800
// instructions, twice per request.
TlsSocket::Step TlsSocket::step(Kind kind, void* data, std::size_t size, std::size_t& n, ErrorCode& ec) {
  if (ERR_peek_error() != 0) {
    ERR_clear_error();
  }
  m_io.error = 0;
  int result = 0;
  switch (kind) {
  case Kind::handshake:
    result = SSL_do_handshake(m_ssl);
    break;
  case Kind::read:
    result = SSL_read_ex(m_ssl, data, size, &n);
    break;
  case Kind::write:
    result = SSL_write_ex(m_ssl, data, size, &n);
    break;
  case Kind::shutdown:
    result = SSL_shutdown(m_ssl) >= 0 ? 1 : -1; // 0: sent, the peer's not yet received
    break;
  }
  if (result == 1) {
    return Step::done;
  }
  int ssl_error = SSL_get_error(m_ssl, result);
  if (ssl_error == SSL_ERROR_WANT_READ) {
    return Step::want_read;
  }
  if (ssl_error == SSL_ERROR_WANT_WRITE) {
    return Step::want_write;
  }
  n = 0;
  ec = error_of(ssl_error);
  ERR_clear_error();
  return Step::done;
}

// Asio's codes for the same events, so that callers see what they saw from
// ssl::stream.
ErrorCode TlsSocket::error_of(int ssl_error) const {
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    return asio::error::eof; // close_notify
  }
  if (m_io.error != 0) {
    return ErrorCode(m_io.error, boost::system::system_category());
  }
  if (m_io.eof) {
    return ssl::error::stream_truncated;
  }
  unsigned long error = ERR_peek_error();
  if (ssl_error == SSL_ERROR_SSL && error != 0) {
    return ErrorCode(static_cast<int>(error), asio::error::get_ssl_category());
  }
  return ssl::error::unexpected_result;
}

std::size_t TlsSocket::read_received(asio::mutable_buffer into) {
  if (into.size() == 0 || SSL_has_pending(m_ssl) == 0) {
    return 0;
  }
  std::size_t n = 0;
  ErrorCode ec;
  if (step(Kind::read, into.data(), into.size(), n, ec) != Step::done || ec) {
    return 0; // a partial record, or an error the next read reports
  }
  return n;
}

asio::mutable_buffer TlsSocket::gather_space() {
  if (!m_gather) {
    m_gather = std::make_unique<char[]>(k_record_bytes);
  }
  return asio::buffer(m_gather.get(), k_record_bytes);
}

} // namespace keyshim::relay
