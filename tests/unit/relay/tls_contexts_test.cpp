// The TLS contexts a pool file needs are built when the file is loaded (the
// state that holds them is published only then), one per distinct ca_file,
// so that no request and no event-loop turn builds one.
#include "relay/tls_contexts.hpp"

#include "config/loader.hpp"
#include "support/http_tls_fixture.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

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

} // namespace
} // namespace keyshim::relay
