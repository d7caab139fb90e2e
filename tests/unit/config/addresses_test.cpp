#include "config/config.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;

namespace {

std::optional<ListenAddress> listen(const std::string& text) {
  std::string error;
  auto address = parse_listen_address(text, error);
  EXPECT_EQ(address.has_value(), error.empty()) << text;
  return address;
}

std::string listen_error(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_listen_address(text, error)) << text;
  return error;
}

std::optional<UpstreamUrl> url(const std::string& text) {
  std::string error;
  return parse_upstream_url(text, error);
}

std::string url_error(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_upstream_url(text, error)) << text;
  return error;
}

} // namespace

TEST(LoopbackHost, AcceptsAll127AddressesIpv6LoopbackAndLocalhost) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.255.3.4"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("[::1]"));
  EXPECT_TRUE(is_loopback_host("0:0:0:0:0:0:0:1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("LocalHost"));
}

TEST(LoopbackHost, RejectsEverythingElse) {
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("128.0.0.1"));
  EXPECT_FALSE(is_loopback_host("192.168.1.10"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("::ffff:127.0.0.1"));
  EXPECT_FALSE(is_loopback_host("localhost.example.com"));
  EXPECT_FALSE(is_loopback_host("127.0.0.1.nip.io"));
  EXPECT_FALSE(is_loopback_host(""));
}

TEST(ListenAddress, ParsesIpv4Ipv6AndLocalhostWithPort) {
  EXPECT_EQ(listen("127.0.0.1:8787"), (ListenAddress{"127.0.0.1", 8787}));
  EXPECT_EQ(listen("[::1]:9000"), (ListenAddress{"::1", 9000}));
  EXPECT_EQ(listen("localhost:1"), (ListenAddress{"localhost", 1}));
  EXPECT_EQ(listen("127.0.0.2:65535"), (ListenAddress{"127.0.0.2", 65535}));
}

TEST(ListenAddress, TextBracketsIpv6) {
  EXPECT_EQ((ListenAddress{"::1", 8787}).text(), "[::1]:8787");
  EXPECT_EQ((ListenAddress{"127.0.0.1", 8787}).text(), "127.0.0.1:8787");
}

TEST(ListenAddress, RequiresAPort) {
  EXPECT_NE(listen_error("127.0.0.1").find("must be HOST:PORT"), std::string::npos);
  EXPECT_NE(listen_error("[::1]").find("must be HOST:PORT"), std::string::npos);
  EXPECT_NE(listen_error("127.0.0.1:").find("must be HOST:PORT"), std::string::npos);
}

TEST(ListenAddress, RejectsInvalidPorts) {
  EXPECT_NE(listen_error("127.0.0.1:65536").find("invalid port"), std::string::npos);
  EXPECT_NE(listen_error("127.0.0.1:http").find("invalid port"), std::string::npos);
  EXPECT_NE(listen_error("127.0.0.1:-1").find("invalid port"), std::string::npos);
}

TEST(ListenAddress, RefusesNonLoopbackAndSaysWhy) {
  std::string error = listen_error("0.0.0.0:8787");
  EXPECT_EQ(error, "must be a loopback address (127.0.0.0/8, [::1] or localhost), not "
                   "\"0.0.0.0:8787\": whoever can reach keyshim can use your API keys");
  listen_error("[::]:8787");
  listen_error("example.com:8787");
}

TEST(ListenAddress, RejectsBareIpv6WithPort) {
  listen_error("::1:8787");
}

TEST(UpstreamUrl, ParsesHttpsWithDefaultPort) {
  EXPECT_EQ(url("https://api.openai.com"), (UpstreamUrl{"https", "api.openai.com", 443, ""}));
}

TEST(UpstreamUrl, KeepsPathPrefixWithoutTrailingSlash) {
  EXPECT_EQ(url("https://example.com/openai/v1/"), (UpstreamUrl{"https", "example.com", 443, "/openai/v1"}));
  EXPECT_EQ(url("https://example.com/"), (UpstreamUrl{"https", "example.com", 443, ""}));
}

TEST(UpstreamUrl, ParsesExplicitPortsAndIpv6) {
  EXPECT_EQ(url("https://example.com:8443"), (UpstreamUrl{"https", "example.com", 8443, ""}));
  EXPECT_EQ(url("http://[::1]:9000/v1"), (UpstreamUrl{"http", "::1", 9000, "/v1"}));
}

TEST(UpstreamUrl, LowercasesSchemeAndHost) {
  EXPECT_EQ(url("HTTPS://API.OpenAI.com"), (UpstreamUrl{"https", "api.openai.com", 443, ""}));
}

TEST(UpstreamUrl, AllowsHttpOnlyToLoopbackHosts) {
  EXPECT_EQ(url("http://127.0.0.1:9000/v1"), (UpstreamUrl{"http", "127.0.0.1", 9000, "/v1"}));
  EXPECT_EQ(url("http://localhost"), (UpstreamUrl{"http", "localhost", 80, ""}));
  std::string error = url_error("http://api.openai.com");
  EXPECT_NE(error.find("not a loopback host"), std::string::npos);
  EXPECT_NE(error.find("use https://"), std::string::npos);
}

TEST(UpstreamUrl, TextIsNormalisedAndOmitsDefaultPorts) {
  EXPECT_EQ(url("https://api.openai.com:443/v1/")->text(), "https://api.openai.com/v1");
  EXPECT_EQ(url("http://127.0.0.1:80")->text(), "http://127.0.0.1");
  EXPECT_EQ(url("http://[::1]:9000/v1")->text(), "http://[::1]:9000/v1");
  EXPECT_EQ(url("https://example.com:8443")->text(), "https://example.com:8443");
}

TEST(UpstreamUrl, RejectsOtherSchemesAndMissingHosts) {
  EXPECT_NE(url_error("ftp://example.com").find("https://"), std::string::npos);
  EXPECT_NE(url_error("api.openai.com").find("https://"), std::string::npos);
  EXPECT_NE(url_error("https://").find("no valid host"), std::string::npos);
  EXPECT_NE(url_error("https://:443").find("no valid host"), std::string::npos);
}

TEST(UpstreamUrl, RejectsBadPorts) {
  EXPECT_NE(url_error("https://example.com:0").find("invalid port"), std::string::npos);
  EXPECT_NE(url_error("https://example.com:99999").find("invalid port"), std::string::npos);
}

TEST(UpstreamUrl, RejectsQueryAndFragment) {
  EXPECT_NE(url_error("https://example.com/v1?x=1").find("query"), std::string::npos);
  EXPECT_NE(url_error("https://example.com/#top").find("query"), std::string::npos);
}

TEST(UpstreamUrl, RejectsCredentialsWithoutEchoingThem) {
  std::string error = url_error("https://user:sk-secret@example.com");
  EXPECT_NE(error.find("credentials"), std::string::npos);
  EXPECT_EQ(error.find("sk-secret"), std::string::npos);
}
