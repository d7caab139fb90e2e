#pragma once
// An HTTPS upstream on 127.0.0.1 written on OpenSSL itself, for what an HTTP
// server library cannot be told to do: end a body with or without
// close_notify, drop a kept-alive connection while it is idle. It serves
// its connections one after the other on a thread of its own, each with a
// 10 s socket timeout, by the script the test gives.
#include "support/http_tls_fixture.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <thread>

using SSL = struct ssl_st;
using SSL_CTX = struct ssl_ctx_st;

namespace keyshim::test {

class RawTlsConnection {
public:
  explicit RawTlsConnection(SSL* ssl) : m_ssl(ssl) {}
  // The next request, its head and its Content-Length body; "" at the end
  // of the stream or on an error.
  std::string read_request();
  // `bytes` in one TLS record.
  void write(const std::string& bytes);
  // close_notify, without waiting for the peer's.
  void close_notify();

private:
  SSL* m_ssl;
  std::string m_pending; // read past the last request
};

class RawTlsUpstream {
public:
  // `script(connection, n)` serves the n-th connection (from 0) after its
  // handshake; the connection is closed when it returns.
  using Script = std::function<void(RawTlsConnection&, int)>;
  explicit RawTlsUpstream(Script script);
  ~RawTlsUpstream();
  RawTlsUpstream(const RawTlsUpstream&) = delete;
  RawTlsUpstream& operator=(const RawTlsUpstream&) = delete;

  int port() const { return m_port; }
  std::string base_url() const { return "https://localhost:" + std::to_string(m_port); }
  const std::string& ca_file() const { return m_pki.ca_pem; }
  // Connections whose handshake completed.
  int connections() const { return m_connections; }

private:
  void serve();
  void serve_one(int fd);

  TempDir m_dir;
  TestPki m_pki;
  Script m_script;
  SSL_CTX* m_ctx = nullptr;
  int m_listener = -1;
  int m_port = 0;
  std::atomic<int> m_connections{0};
  std::thread m_thread;
};

} // namespace keyshim::test
