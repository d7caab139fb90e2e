#include "relay/upstream_conn.hpp"

#include "relay/proxy_tunnel.hpp"
#include "relay/socket_read.hpp"
#include "relay/socket_send.hpp"

#include <boost/asio/connect.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fmt/format.h>

#include <sys/socket.h>

namespace keyshim::relay {
namespace {

// The most plaintext one TLS record carries (RFC 8446 section 5.1).
constexpr std::size_t k_tls_record_bytes = 16 * 1024;

// Providers close idle connections after a while; an old one would likely
// fail on first use and cost a retry.
constexpr auto k_max_idle_age = std::chrono::seconds(20);
// A connection idle for less than this was in use a moment ago: its upstream
// has not timed it out, and if it closed it all the same, the attempt fails
// before any byte and is retried on a fresh connection. Peeking at it would
// cost a system call per request on a busy pool; older ones are peeked at.
constexpr auto k_peek_after = std::chrono::seconds(1);
constexpr std::size_t k_max_idle_per_origin = 64;

// The name check happens inside OpenSSL during the handshake: subjectAltNames
// only (a matching Common Name does not count when SANs exist, RFC 6125), no
// partial wildcards, IP literals against IP SANs. No SNI for IP literals.
bool verify_host(SSL* ssl, const std::string& host, bool is_ip) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (is_ip) {
    return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  }
  X509_VERIFY_PARAM_set_hostflags(param,
                                  X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0) == 1 &&
         SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
}

} // namespace

UpstreamConn::UpstreamConn(Executor ex, std::string origin, std::shared_ptr<ssl::context> tls,
                           std::optional<config::ProxyUrl> proxy)
    : m_origin(std::move(origin)), m_context(std::move(tls)), m_plain(ex), m_proxy(std::move(proxy)) {
  if (m_context) {
    m_tls = std::make_unique<TlsSocket>(ex, *m_context);
  }
  m_buffer.reserve(k_read_bytes);
}

void UpstreamConn::connect(const config::UpstreamUrl& url, ConnectDone done) {
  m_done = std::move(done);
  m_host = url.host;
  m_port = url.port;
  // Through a proxy the socket goes to the proxy, and the upstream is named
  // only in the CONNECT line. The exchange's connect deadline covers the
  // whole of it: proxy connect, CONNECT and the TLS handshake.
  const std::string& dial_host = m_proxy ? m_proxy->host : url.host;
  int dial_port = m_proxy ? m_proxy->port : url.port;
  ErrorCode ec;
  asio::ip::address address = asio::ip::make_address(dial_host, ec);
  if (!ec) { // an IP literal: nothing to resolve
    tcp::endpoint endpoint(address, static_cast<unsigned short>(dial_port));
    socket().async_connect(endpoint,
                           [self = shared_from_this()](const ErrorCode& e) { self->on_connected(e); });
    return;
  }
  m_resolver.emplace(socket().get_executor());
  m_resolver->async_resolve(
      dial_host, std::to_string(dial_port),
      [self = shared_from_this()](const ErrorCode& e, const tcp::resolver::results_type& results) {
        self->on_resolved(e, results);
      });
}

void UpstreamConn::finish_connect(ConnectFailure failure, std::string detail) {
  ConnectDone done = std::move(m_done);
  m_done = nullptr;
  if (done) {
    done(failure, std::move(detail));
  }
}

void UpstreamConn::on_resolved(const ErrorCode& ec, const tcp::resolver::results_type& results) {
  if (ec) {
    finish_connect(ConnectFailure::connect,
                   m_proxy ? fmt::format("cannot resolve proxy {}: {}", m_proxy->host, ec.message())
                           : fmt::format("cannot resolve {}: {}", m_host, ec.message()));
    return;
  }
  asio::async_connect(
      socket(), results,
      [self = shared_from_this()](const ErrorCode& e, const tcp::endpoint&) { self->on_connected(e); });
}

void UpstreamConn::on_connected(const ErrorCode& ec) {
  if (ec) {
    finish_connect(ConnectFailure::connect,
                   m_proxy ? fmt::format("cannot reach proxy {}: {}", m_proxy->authority(), ec.message())
                           : ec.message());
    return;
  }
  ErrorCode ignored;
  socket().set_option(tcp::no_delay(true), ignored);
  enable_read_hints(socket().native_handle());
  if (m_proxy) {
    // http:// upstreams tunnel too: one code path, and a proxy that allows
    // CONNECT to the port is all it takes (absolute-form requests would
    // need a second request writer).
    open_tunnel(socket(), *m_proxy, m_host, m_port,
                [self = shared_from_this()](const std::string& failure) { self->on_tunnel(failure); });
    return;
  }
  start_session();
}

void UpstreamConn::on_tunnel(const std::string& failure) {
  if (!failure.empty()) {
    finish_connect(ConnectFailure::connect, failure);
    return;
  }
  start_session();
}

// The socket reaches the upstream, directly or through a tunnel: TLS, with
// SNI and the certificate checked against the upstream's host, never the
// proxy's, exactly as without a proxy.
void UpstreamConn::start_session() {
  if (!m_tls) {
    finish_connect(ConnectFailure::none, {});
    return;
  }
  ErrorCode ip_ec;
  asio::ip::make_address(m_host, ip_ec);
  if (!verify_host(m_tls->native_handle(), m_host, !ip_ec)) {
    finish_connect(ConnectFailure::tls, "cannot set up the host name check");
    return;
  }
  m_tls->async_handshake(
      [self = shared_from_this()](const ErrorCode& e, std::size_t) { self->on_handshake(e); });
}

void UpstreamConn::on_handshake(const ErrorCode& ec) {
  if (!ec) {
    finish_connect(ConnectFailure::none, {});
    return;
  }
  long verify = SSL_get_verify_result(m_tls->native_handle());
  std::string detail = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : ec.message();
  ERR_clear_error();
  finish_connect(ConnectFailure::tls, detail);
}

std::size_t UpstreamConn::write_now(const std::array<asio::const_buffer, 2>& buffers, ErrorCode& ec) {
  if (m_tls) {
    return m_tls->write_now(buffers, ec);
  }
  return send_without_waiting(m_plain, buffers, ec);
}

// A TLS read decrypts one record, and each read's completion is a trip
// through the event loop (an epoll_wait), so an upstream that sends every
// event in a record of its own would cost a loop trip and a client write
// per event. The socket reads ahead: the records that one recv brought in
// are decrypted here without waiting.
std::size_t UpstreamConn::read_received() {
  if (!m_tls) {
    return 0;
  }
  std::size_t n = m_tls->read_received(m_buffer.prepare(k_tls_record_bytes));
  m_buffer.commit(n);
  return n;
}

// Each read is a recvfrom and its piece a sendmsg to the client, and on a
// bulk stream the socket always holds more than a read takes: a 16 KiB read
// of 1 KiB events costs about three times the system calls per byte of a
// 64 KiB one (strace: 31k recvfrom in 2 s at 0.25 GB/s, against 10k at
// 0.35 GB/s; CPU per GB -40 %). Only a stream that fills its reads grows
// its buffer, once: a held stream of small events keeps 16 KiB. A TLS
// stream reads one record (at most 16 KiB) at a time whatever the room.
void UpstreamConn::note_body_piece(std::size_t bytes) {
  if (!m_tls && bytes > m_buffer.capacity() / 2 && m_buffer.capacity() < k_wide_read_bytes) {
    m_buffer.reserve(k_wide_read_bytes);
  }
}

void UpstreamConn::close() {
  ErrorCode ignored;
  socket().close(ignored); // aborts pending operations and sends the FIN
  if (m_resolver) {
    m_resolver->cancel();
  }
}

bool UpstreamConn::looks_alive(bool peek) {
  if (!socket().is_open() || m_buffer.size() != 0) {
    return false;
  }
  if (!peek) {
    return true;
  }
  char byte = 0;
  ssize_t n = ::recv(socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

UpstreamPool::UpstreamPool(Executor ex) : m_ex(ex) {
}

std::string UpstreamPool::origin_of(const config::KeyConfig& key) {
  std::string origin = fmt::format("{}|{}", key.base_url.text(), key.ca_file.value_or(""));
  if (key.proxy) {
    // The credentials' fingerprint, not the credentials: origins are map keys
    // that must never carry a secret.
    origin += fmt::format("|{}|{}", key.proxy->authority(),
                          key.proxy->authorization ? key.proxy->authorization->fingerprint() : "");
  }
  return origin;
}

std::shared_ptr<UpstreamConn> UpstreamPool::take_idle(const std::string& origin, MonoTime now) {
  auto it = m_idle.find(origin);
  if (it == m_idle.end()) {
    return nullptr;
  }
  while (!it->second.empty()) {
    std::shared_ptr<UpstreamConn> conn = std::move(it->second.back());
    it->second.pop_back();
    auto idle = now - conn->idle_since;
    if (idle < k_max_idle_age && conn->looks_alive(idle >= k_peek_after)) {
      return conn;
    }
    conn->close();
  }
  return nullptr;
}

void UpstreamPool::put_idle(std::shared_ptr<UpstreamConn> conn, MonoTime now) {
  auto& idle = m_idle[conn->origin()];
  if (idle.size() >= k_max_idle_per_origin) {
    idle.front()->close();
    idle.erase(idle.begin());
  }
  conn->idle_since = now;
  idle.push_back(std::move(conn));
}

std::shared_ptr<UpstreamConn> UpstreamPool::make(const config::KeyConfig& key, const std::string& origin,
                                                 const TlsContexts* contexts, std::string& error) {
  std::shared_ptr<ssl::context> tls;
  if (key.base_url.tls()) {
    const TlsContexts::Entry* entry = contexts ? contexts->find(key.ca_file) : nullptr;
    if (!entry) {
      entry = &fallback_context(key.ca_file);
    }
    if (!entry->context) {
      error = entry->error;
      return nullptr;
    }
    tls = entry->context;
  }
  return std::make_shared<UpstreamConn>(m_ex, origin, std::move(tls), key.proxy);
}

void UpstreamPool::clear() {
  for (auto& [origin, conns] : m_idle) {
    for (auto& conn : conns) {
      conn->close();
    }
  }
  m_idle.clear();
}

std::size_t UpstreamPool::idle_count() const {
  std::size_t n = 0;
  for (const auto& [origin, conns] : m_idle) {
    n += conns.size();
  }
  return n;
}

const TlsContexts::Entry& UpstreamPool::fallback_context(const std::optional<std::string>& ca_file) {
  std::string name = ca_file.value_or("");
  auto it = m_fallback.find(name);
  if (it == m_fallback.end()) {
    it = m_fallback.emplace(std::move(name), TlsContexts::make(ca_file)).first;
  }
  return it->second;
}

} // namespace keyshim::relay
