#include "support/http_raw_tls_upstream.hpp"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <strings.h>

namespace keyshim::test {
namespace {

constexpr int k_max_connections = 100;
constexpr std::size_t k_max_request_bytes = 1 << 20;

void need(bool ok, const char* what) {
  if (!ok) {
    throw std::runtime_error(std::string("raw tls upstream: ") + what);
  }
}

// The value of Content-Length in `head`, 0 when there is none.
std::size_t content_length(const std::string& head) {
  static const std::string name = "\r\ncontent-length:";
  for (std::size_t at = 0; at + name.size() < head.size(); ++at) {
    if (::strncasecmp(head.c_str() + at, name.c_str(), name.size()) == 0) {
      return std::stoul(head.substr(at + name.size()));
    }
  }
  return 0;
}

} // namespace

std::string RawTlsConnection::read_request() {
  for (std::size_t round = 0; round < k_max_request_bytes; ++round) {
    std::size_t end = m_pending.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t size = end + 4 + content_length(m_pending.substr(0, end + 2));
      if (m_pending.size() >= size) {
        std::string request = m_pending.substr(0, size);
        m_pending.erase(0, size);
        return request;
      }
    }
    char buffer[4096];
    int n = SSL_read(m_ssl, buffer, sizeof buffer);
    if (n <= 0 || m_pending.size() > k_max_request_bytes) {
      ERR_clear_error();
      return {};
    }
    m_pending.append(buffer, static_cast<std::size_t>(n));
  }
  return {};
}

void RawTlsConnection::write(const std::string& bytes) {
  if (SSL_write(m_ssl, bytes.data(), static_cast<int>(bytes.size())) <= 0) {
    ERR_clear_error(); // the test sees what keyshim made of it
  }
}

void RawTlsConnection::close_notify() {
  SSL_shutdown(m_ssl);
  ERR_clear_error();
}

RawTlsUpstream::RawTlsUpstream(Script script) : m_pki(make_test_pki(m_dir)), m_script(std::move(script)) {
  std::signal(SIGPIPE, SIG_IGN); // OpenSSL writes to the socket with write(2)
  m_ctx = SSL_CTX_new(TLS_server_method());
  need(m_ctx != nullptr, "SSL_CTX_new");
  need(SSL_CTX_use_certificate_chain_file(m_ctx, m_pki.server_pem.c_str()) == 1 &&
           SSL_CTX_use_PrivateKey_file(m_ctx, m_pki.server_key.c_str(), SSL_FILETYPE_PEM) == 1,
       "cannot load the test certificate");
  m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  need(::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
           ::listen(m_listener, 16) == 0 &&
           ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &length) == 0,
       "cannot listen on 127.0.0.1");
  m_port = ntohs(address.sin_port);
  m_thread = std::thread([this] { serve(); });
}

RawTlsUpstream::~RawTlsUpstream() {
  ::shutdown(m_listener, SHUT_RDWR); // accept() fails, and the thread ends
  m_thread.join();
  ::close(m_listener);
  SSL_CTX_free(m_ctx);
}

void RawTlsUpstream::serve() {
  for (int n = 0; n < k_max_connections; ++n) {
    int fd = ::accept(m_listener, nullptr, nullptr);
    if (fd < 0) {
      return;
    }
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    serve_one(fd);
    ::close(fd);
  }
}

void RawTlsUpstream::serve_one(int fd) {
  SSL* ssl = SSL_new(m_ctx);
  if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_accept(ssl) == 1) {
    RawTlsConnection connection(ssl);
    m_script(connection, m_connections++);
  }
  ERR_clear_error();
  SSL_free(ssl);
}

} // namespace keyshim::test
