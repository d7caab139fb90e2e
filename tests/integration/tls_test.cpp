// Upstream TLS through the real server (docs/behaviour.md §9): keyshim verifies
// the upstream's chain against the system CAs plus `ca_file`, and its
// hostname; a failed check is a "tls error" for the key and the upstream
// never sees the request, let alone the key.
#include "support/http_shim.hpp"
#include "support/http_tls_fixture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>

namespace keyshim::test {
namespace {

httplib::Result post(const Shim& shim) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post("/v1/chat/completions", R"({"model":"m"})", "application/json");
}

// A TOML literal string: the temporary paths hold no quote to escape.
std::string ca_file_setting(const std::string& path) {
  return "ca_file = '" + path + "'\n";
}

std::string url(const std::string& host, const HttpsUpstream& upstream) {
  return "https://" + host + ":" + std::to_string(upstream.port());
}

// The relay answered 502 and blamed a failed TLS handshake on the only key.
void expect_tls_error(const httplib::Result& res) {
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 502);
  EXPECT_NE(res->body.find("k0: tls error"), std::string::npos) << res->body;
}

TEST(TlsUpstream, LocalhostResolvesWhereTheTestUpstreamListens) {
  // The other tests rely on this; when it fails, fix /etc/hosts, not the relay.
  EXPECT_TRUE(localhost_resolves_to_ipv4_loopback());
}

TEST(TlsUpstream, VerifiedAgainstCaFileServesTheRequest) {
  HttpsUpstream upstream;
  Shim shim(pool_toml(1, ca_file_setting(upstream.ca_file())), url("localhost", upstream));
  auto res = post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, R"({"ok":true})");
  EXPECT_EQ(upstream.authorizations(), std::vector<std::string>{"Bearer " + test_key(0)});
}

TEST(TlsUpstream, UnknownCaIsATlsErrorNotASuccess) {
  // Without ca_file only the system store counts, and it has never heard of
  // the throwaway CA.
  HttpsUpstream upstream;
  Shim shim(pool_toml(1), url("localhost", upstream));
  expect_tls_error(post(shim));
  EXPECT_TRUE(upstream.authorizations().empty());
}

TEST(TlsUpstream, CaFileOfAnotherCaDoesNotVouchForTheServer) {
  // ca_file adds one specific CA; it must not switch verification off.
  HttpsUpstream upstream;
  TempDir other_dir;
  TestPki other = make_test_pki(other_dir);
  Shim shim(pool_toml(1, ca_file_setting(other.ca_pem)), url("localhost", upstream));
  expect_tls_error(post(shim));
  EXPECT_TRUE(upstream.authorizations().empty());
}

TEST(TlsUpstream, HostnameMismatchIsRefused) {
  // A chain keyshim trusts, but the certificate names DNS:localhost (SAN and
  // CN) and no IP address, so it does not vouch for 127.0.0.1.
  HttpsUpstream upstream;
  Shim shim(pool_toml(1, ca_file_setting(upstream.ca_file())), url("127.0.0.1", upstream));
  expect_tls_error(post(shim));
  EXPECT_TRUE(upstream.authorizations().empty());
}

TEST(TlsUpstream, CommonNameIsIgnoredWhenTheCertificateHasSubjectAltNames) {
  // CN=127.0.0.1 but SAN DNS:localhost: RFC 6125 says the SAN alone decides,
  // so this certificate does not vouch for 127.0.0.1 (httplib alone would
  // accept it).
  HttpsUpstream upstream("127.0.0.1");
  Shim shim(pool_toml(1, ca_file_setting(upstream.ca_file())), url("127.0.0.1", upstream));
  expect_tls_error(post(shim));
  EXPECT_TRUE(upstream.authorizations().empty());
}

TEST(TlsUpstream, TheSystemBundleFileIsTrustedWithoutCaFile) {
  // The system store is the hashed directory plus the bundle file, read
  // by subject when the directory lacks an issuer; here the directory is
  // empty and only the bundle (SSL_CERT_FILE) knows the CA.
  struct SystemStoreOverride {
    SystemStoreOverride(const std::string& file, const std::string& dir) {
      ::setenv("SSL_CERT_FILE", file.c_str(), 1);
      ::setenv("SSL_CERT_DIR", dir.c_str(), 1);
    }
    ~SystemStoreOverride() {
      ::unsetenv("SSL_CERT_FILE");
      ::unsetenv("SSL_CERT_DIR");
    }
  };
  HttpsUpstream upstream;
  TempDir empty_dir;
  SystemStoreOverride store(upstream.ca_file(), empty_dir.path());
  Shim shim(pool_toml(1), url("localhost", upstream));
  auto res = post(shim);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(upstream.authorizations(), std::vector<std::string>{"Bearer " + test_key(0)});
}

// An HTTPS upstream that sends every event in a TLS record of its own:
// keyshim joins the records already received into one client write (issue
// 19); the bytes and the usage count must come out the same.
TEST(TlsUpstream, AStreamOfSmallRecordsArrivesWholeAndCountsItsUsage) {
  HttpsUpstream upstream;
  Shim shim(pool_toml(1, ca_file_setting(upstream.ca_file())), url("localhost", upstream));
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  client.set_keep_alive(true); // the next request waits for this one's end
  auto res = client.Post("/v1/stream", R"({"stream":true})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::string expected;
  for (int i = 0; i < HttpsUpstream::k_stream_events; ++i) {
    expected += HttpsUpstream::stream_event(i);
  }
  EXPECT_EQ(res->body, expected);
  // The response is counted when its last write completes, which the client
  // may see first; the connection reads the next request only after that.
  ASSERT_TRUE(client.Get("/health"));
  const auto& counts = shim.server().state()->pools.at(0).keys->health(0).total;
  EXPECT_EQ(counts.input_tokens, 5U);
  EXPECT_EQ(counts.output_tokens, 3U);
}

} // namespace
} // namespace keyshim::test
