// The TLS contexts a pool file needs are built when the file is loaded (the
// state that holds them is published only then), one per distinct ca_file,
// so that no request and no event-loop turn builds one.
#include "relay/tls_contexts.hpp"

#include "config/loader.hpp"
#include "support/http_tls_fixture.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fmt/format.h>

#include <cstdlib>

namespace keyshim::relay {
namespace {

std::shared_ptr<const TlsContexts> contexts_of(const std::string& text) {
  config::LoadResult loaded = config::load_pool_text(text, "keys.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.problems_text();
  return loaded.ok() ? TlsContexts::build(*loaded.config) : nullptr;
}

TEST(TlsContexts, OneContextPerDistinctCaFileOfTheHttpsKeys) {
  test::TempDir dir;
  test::TestPki pki = test::make_test_pki(dir);
  auto contexts = contexts_of(fmt::format(R"([pools.a]
base_url = "https://a.example"
ca_file = "{0}"
[[pools.a.keys]]
key = "sk-tls-ctx-0001"
[[pools.a.keys]]
key = "sk-tls-ctx-0002"

[pools.b]
base_url = "https://b.example"
[[pools.b.keys]]
key = "sk-tls-ctx-0003"
[[pools.b.keys]]
key = "sk-tls-ctx-0004"
ca_file = "{0}"
)",
                                          pki.ca_pem));
  ASSERT_TRUE(contexts);
  EXPECT_EQ(contexts->size(), 2u); // the ca_file, and the system store alone
  const TlsContexts::Entry* with_ca = contexts->find(pki.ca_pem);
  const TlsContexts::Entry* system = contexts->find(std::nullopt);
  ASSERT_TRUE(with_ca && system);
  EXPECT_TRUE(with_ca->context && with_ca->error.empty()) << with_ca->error;
  EXPECT_TRUE(system->context && system->error.empty()) << system->error;
  EXPECT_NE(with_ca->context, system->context);
}

TEST(TlsContexts, PlainHttpPoolsNeedNone) {
  auto contexts = contexts_of(R"([pools.local]
base_url = "http://127.0.0.1:9"
[[pools.local.keys]]
key = "sk-tls-ctx-0005"
)");
  ASSERT_TRUE(contexts);
  EXPECT_EQ(contexts->size(), 0u);
  EXPECT_EQ(contexts->find(std::nullopt), nullptr);
}

TEST(TlsContexts, ACaFileOpenSslCannotLoadIsAnErrorNamingTheFile) {
  // The loader checks that ca_file holds a PEM certificate; this one was
  // replaced by garbage after that check.
  test::TempDir dir;
  std::string path =
      dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  TlsContexts::Entry entry = TlsContexts::make(path);
  EXPECT_EQ(entry.context, nullptr);
  EXPECT_NE(entry.error.find(fmt::format("cannot load ca_file \"{}\"", path)), std::string::npos)
      << entry.error;
}

// The system store is the hashed directory plus the bundle file, both from
// the environment (SSL_CERT_DIR, SSL_CERT_FILE) while this lives.
class SystemStoreOverride {
public:
  SystemStoreOverride(const std::string& file, const std::string& dir) {
    ::setenv("SSL_CERT_FILE", file.c_str(), 1);
    ::setenv("SSL_CERT_DIR", dir.c_str(), 1);
  }
  ~SystemStoreOverride() {
    ::unsetenv("SSL_CERT_FILE");
    ::unsetenv("SSL_CERT_DIR");
  }
  SystemStoreOverride(const SystemStoreOverride&) = delete;
  SystemStoreOverride& operator=(const SystemStoreOverride&) = delete;
};

// Whether a context with the system store alone verifies the certificate in
// `pem_path` as a TLS server's (the chain and its trust; no host name).
bool system_store_vouches_for(const std::string& pem_path) {
  TlsContexts::Entry entry = TlsContexts::make(std::nullopt);
  EXPECT_TRUE(entry.context) << entry.error;
  BIO* in = BIO_new_file(pem_path.c_str(), "r");
  X509* cert = in ? PEM_read_bio_X509(in, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(in);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  bool ok =
      entry.context && cert && ctx &&
      X509_STORE_CTX_init(ctx, SSL_CTX_get_cert_store(entry.context->native_handle()), cert, nullptr) == 1 &&
      X509_STORE_CTX_set_default(ctx, "ssl_server") == 1 && X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_free(cert);
  return ok;
}

// The CA of `pki` in the "TRUSTED CERTIFICATE" form a bundle may hold.
std::string trusted_form(const test::TestPki& pki) {
  BIO* in = BIO_new_file(pki.ca_pem.c_str(), "r");
  X509* cert = in ? PEM_read_bio_X509(in, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(in);
  BIO* out = BIO_new(BIO_s_mem());
  std::string pem;
  char* data = nullptr;
  if (cert && out && PEM_write_bio_X509_AUX(out, cert) == 1) {
    pem.assign(data, static_cast<std::size_t>(BIO_get_mem_data(out, &data)));
  }
  BIO_free(out);
  X509_free(cert);
  return pem;
}

TEST(SystemTrust, ACaOnlyTheBundleKnowsVouchesForItsServerAmongOtherBlocks) {
  // The bundle is indexed by subject and a certificate decoded only when a
  // handshake asks for it: the CA must be found behind a certificate of
  // another subject and a block that is no certificate, and the directory
  // is empty. (Not behind another test CA: they all have one subject and
  // their leaves no authority key identifier, so OpenSSL would take the
  // first, as it would from its own default paths.)
  test::TempDir dir;
  test::TestPki pki = test::make_test_pki(dir);
  test::TempDir other_dir;
  test::TestPki other = test::make_test_pki(other_dir);
  test::TempDir empty_dir;
  std::string bundle =
      dir.write("bundle.crt", test::read_file(other.server_pem) + test::read_file(pki.server_key) +
                                  test::read_file(pki.ca_pem));
  SystemStoreOverride store(bundle, empty_dir.path());
  EXPECT_TRUE(system_store_vouches_for(pki.server_pem));
}

TEST(SystemTrust, ACaInTheTrustedCertificateFormVouchesForItsServer) {
  test::TempDir dir;
  test::TestPki pki = test::make_test_pki(dir);
  test::TempDir empty_dir;
  std::string pem = trusted_form(pki);
  ASSERT_NE(pem.find("-----BEGIN TRUSTED CERTIFICATE-----"), std::string::npos) << pem;
  SystemStoreOverride store(dir.write("bundle.crt", pem), empty_dir.path());
  EXPECT_TRUE(system_store_vouches_for(pki.server_pem));
}

TEST(SystemTrust, ABundleWithoutTheCaDoesNotVouchForItsServer) {
  test::TempDir dir;
  test::TestPki pki = test::make_test_pki(dir);
  test::TempDir other_dir;
  test::TestPki other = test::make_test_pki(other_dir);
  test::TempDir empty_dir;
  // The other CA has the same subject: the lookup finds it, its signature does not fit.
  SystemStoreOverride store(dir.write("bundle.crt", test::read_file(other.ca_pem)), empty_dir.path());
  EXPECT_FALSE(system_store_vouches_for(pki.server_pem));
  EXPECT_TRUE(system_store_vouches_for(other.server_pem));
}

} // namespace
} // namespace keyshim::relay
