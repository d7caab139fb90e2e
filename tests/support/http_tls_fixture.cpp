#include "support/http_tls_fixture.hpp"

#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <stdexcept>

namespace keyshim::test {

// stop() in httplib 0.11.4 does nothing until listen_after_bind() has set
// is_running_, so a destructor racing the listen thread could hang in join().
// Shutting the listening socket down makes accept() fail whenever it runs,
// which ends the accept loop either way (the same move LoopbackServer makes).
class ListeningSslServer : public httplib::SSLServer {
public:
  using httplib::SSLServer::SSLServer;
  void close_listener() {
    socket_t listening = svr_sock_;
    if (listening != INVALID_SOCKET) {
      ::shutdown(listening, SHUT_RDWR);
    }
  }
};

namespace {

template <auto Free> struct Freer {
  template <typename T> void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Freer<X509_free>>;
using Bio = std::unique_ptr<BIO, Freer<BIO_free>>;

void need(bool ok, const char* what) {
  if (!ok) {
    char reason[256];
    ERR_error_string_n(ERR_get_error(), reason, sizeof reason);
    throw std::runtime_error(std::string("test pki: ") + what + ": " + reason);
  }
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value);
  need(ext != nullptr, value);
  int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  need(added == 1, value);
}

// A certificate for `key` named CN=`common_name`, signed by `issuer`/`issuer_key`
// (itself when `issuer` is null) and valid from an hour ago for a day.
Cert make_cert(EVP_PKEY* key, const std::string& common_name, long serial, X509* issuer, EVP_PKEY* issuer_key,
               const std::vector<std::pair<int, const char*>>& extensions) {
  Cert cert(X509_new());
  need(cert && X509_set_version(cert.get(), 2) == 1, "X509_new");
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  need(X509_set_pubkey(cert.get(), key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  need(X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1, "X509_set_issuer_name");
  for (const auto& [nid, value] : extensions) {
    add_extension(cert.get(), signer, nid, value);
  }
  need(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

template <typename Write> std::string pem(Write write) {
  Bio bio(BIO_new(BIO_s_mem()));
  need(bio && write(bio.get()) == 1, "PEM_write");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

} // namespace

TestPki make_test_pki(const TempDir& dir, const std::string& common_name,
                      const std::string& subject_alt_name) {
  Key ca_key(EVP_EC_gen("P-256"));
  Key server_key(EVP_EC_gen("P-256"));
  need(ca_key && server_key, "EVP_EC_gen");
  Cert ca = make_cert(ca_key.get(), "keyshim test CA", 1, nullptr, ca_key.get(),
                      {{NID_basic_constraints, "critical,CA:TRUE"},
                       {NID_key_usage, "critical,keyCertSign,cRLSign"},
                       {NID_subject_key_identifier, "hash"}});
  // By default deliberately no IP:127.0.0.1, so https://127.0.0.1 must fail the hostname check.
  Cert server = make_cert(server_key.get(), common_name, 2, ca.get(), ca_key.get(),
                          {{NID_basic_constraints, "critical,CA:FALSE"},
                           {NID_key_usage, "critical,digitalSignature"},
                           {NID_ext_key_usage, "serverAuth"},
                           {NID_subject_alt_name, subject_alt_name.c_str()}});
  TestPki pki;
  pki.ca_pem = dir.write("ca.pem", pem([&](BIO* b) { return PEM_write_bio_X509(b, ca.get()); }));
  pki.server_pem = dir.write("server.pem", pem([&](BIO* b) { return PEM_write_bio_X509(b, server.get()); }));
  pki.server_key =
      dir.write("server.key", pem([&](BIO* b) {
                  return PEM_write_bio_PrivateKey(b, server_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
                }));
  return pki;
}

bool localhost_resolves_to_ipv4_loopback() {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo("localhost", nullptr, &hints, &found) != 0) {
    return false;
  }
  bool loopback = false;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    loopback =
        loopback || (a->ai_family == AF_INET &&
                     reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
  }
  freeaddrinfo(found);
  return loopback;
}

HttpsUpstream::HttpsUpstream(const std::string& common_name, const std::string& subject_alt_name)
    : m_pki(make_test_pki(m_dir, common_name, subject_alt_name)) {
  m_server = std::make_unique<ListeningSslServer>(m_pki.server_pem.c_str(), m_pki.server_key.c_str());
  if (!m_server->is_valid()) {
    throw std::runtime_error("https upstream: httplib rejected the generated certificate or key");
  }
  m_server->set_tcp_nodelay(true);
  auto answer = [this](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(m_mutex);
      m_authorizations.push_back(req.get_header_value("Authorization"));
    }
    res.set_content(R"({"ok":true})", "application/json");
  };
  // An event stream that flushes each event as a chunk, each in a TLS record
  // of its own, and ends with a usage report.
  m_server->Post("/v1/stream", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [](std::size_t, httplib::DataSink& sink) {
      for (int i = 0; i < k_stream_events; ++i) {
        std::string event = stream_event(i);
        if (!sink.write(event.data(), event.size())) {
          return false;
        }
      }
      sink.done();
      return true;
    });
  });
  m_server->Get(".*", answer);
  m_server->Post(".*", answer);
  // The socket listens once bound, so connections made before the thread
  // reaches accept() simply wait in the backlog: no readiness wait needed.
  m_port = m_server->bind_to_any_port("127.0.0.1");
  if (m_port < 0) {
    throw std::runtime_error("https upstream: cannot bind 127.0.0.1");
  }
  m_thread = std::thread([this] { m_server->listen_after_bind(); });
}

HttpsUpstream::~HttpsUpstream() {
  m_server->close_listener();
  m_thread.join();
}

std::string HttpsUpstream::stream_event(int i) {
  if (i + 1 == k_stream_events) {
    return "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n";
  }
  return "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::to_string(i) +
         std::string(static_cast<std::size_t>(i % 89), 'y') + "\"}}]}\n\n";
}

std::vector<std::string> HttpsUpstream::authorizations() const {
  std::lock_guard lock(m_mutex);
  return m_authorizations;
}

} // namespace keyshim::test
