#pragma once
// A throwaway PKI made at test time (no checked-in keys) and an HTTPS
// upstream on 127.0.0.1 presenting a certificate for DNS:localhost only.
#include "support/temp_dir.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace keyshim::test {

// Paths of the PEM files make_test_pki() wrote.
struct TestPki {
  std::string ca_pem;     // self-signed CA:TRUE certificate
  std::string server_pem; // leaf signed by that CA: CN and subjectAltName (by default DNS:localhost, no IP)
  std::string server_key; // the leaf's EC P-256 private key
};

// Generate a fresh CA and server certificate into `dir` (ca.pem, server.pem,
// server.key). The leaf's subjectAltName is `subject_alt_name` (OpenSSL's
// syntax, "DNS:localhost,IP:0.0.0.0"); its Common Name is `common_name`.
// Throws std::runtime_error when OpenSSL fails.
TestPki make_test_pki(const TempDir& dir, const std::string& common_name = "localhost",
                      const std::string& subject_alt_name = "DNS:localhost");

// Whether "localhost" resolves to 127.0.0.1 (among others), where HttpsUpstream listens.
bool localhost_resolves_to_ipv4_loopback();

class ListeningSslServer;

// httplib::SSLServer on 127.0.0.1 answering any GET/POST with 200
// {"ok":true}, recording the Authorization header of each request.
class HttpsUpstream {
public:
  explicit HttpsUpstream(const std::string& common_name = "localhost",
                         const std::string& subject_alt_name = "DNS:localhost");
  ~HttpsUpstream();
  HttpsUpstream(const HttpsUpstream&) = delete;
  HttpsUpstream& operator=(const HttpsUpstream&) = delete;

  int port() const { return m_port; }
  // The CA that signed this server's certificate.
  const std::string& ca_file() const { return m_pki.ca_pem; }
  // POST /v1/stream answers k_stream_events events, stream_event(0) to the
  // last, each written as a chunk of its own; the last reports 5 input and 3
  // output tokens. Every other request gets {"ok":true}.
  static constexpr int k_stream_events = 2000;
  static std::string stream_event(int i);
  // Authorization header of every request that got past the handshake. Thread-safe.
  std::vector<std::string> authorizations() const;

private:
  TempDir m_dir;
  TestPki m_pki;
  std::unique_ptr<ListeningSslServer> m_server;
  int m_port = -1;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::vector<std::string> m_authorizations;
};

} // namespace keyshim::test
