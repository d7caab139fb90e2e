// Upstreams through an HTTP proxy, end to end: the built binary, a real
// proxy (tinyproxy) and TLS upstreams on 127.0.0.1. All traffic is loopback.
//
// The environment never applies to loopback upstreams, so the tests that
// need an upstream the environment does apply to use https://0.0.0.0:PORT:
// 0.0.0.0 is not a loopback host by keyshim's rules, yet Linux delivers a
// connection to 0.0.0.0 to the local host (127.0.0.1), and the test
// certificate names IP:0.0.0.0.
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/http_tls_fixture.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_proxy.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <openssl/evp.h>

#include <signal.h>

namespace keyshim::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Whatever the developer's shell exports must not leak into the child.
const std::vector<std::string> k_proxy_variables = {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY",
                                                    "no_proxy",    "NO_PROXY",    "all_proxy",  "ALL_PROXY"};

struct PoolKey {
  std::string base_url;
  std::string ca_file;
};

std::string url_of(const std::string& host, const HttpsUpstream& upstream) {
  return fmt::format("https://{}:{}", host, upstream.port());
}

// A pool file: `upstream_extra` in [upstream] (e.g. a proxy line), key i labelled ki.
std::string pool(const std::string& upstream_extra, const std::vector<PoolKey>& keys) {
  std::string text =
      "[upstream]\nconnect_timeout = \"3s\"\nfirst_byte_timeout = \"5s\"\n" + upstream_extra + "\n";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // TOML literal strings: the temporary paths hold no quote.
    text += fmt::format("[[keys]]\nlabel = \"k{}\"\nkey = \"{}\"\nbase_url = '{}'\n", i,
                        test_key(static_cast<int>(i)), keys[i].base_url);
    text += keys[i].ca_file.empty() ? "\n" : fmt::format("ca_file = '{}'\n\n", keys[i].ca_file);
  }
  return text;
}

std::string proxy_line(const std::string& url) {
  return fmt::format("proxy = '{}'\n", url);
}

// `keyshim serve -v` on a pool file, with only the proxy variables in `env`.
class Serve {
public:
  Serve(const std::string& pool_text, const Env& env = {})
      : m_path(m_dir.write("keys.toml", pool_text, 0600)), m_port(unused_loopback_port()),
        m_child(ChildProcess::start(
            {KEYSHIM_BINARY, "serve", "-v", "-c", m_path, "--listen", "127.0.0.1:" + std::to_string(m_port)},
            options(env))) {
    EXPECT_TRUE(m_child.wait_for_stderr("listening on")) << m_child.err();
  }

  static RunOptions options(const Env& env) {
    RunOptions run;
    run.env = env;
    run.unset_env = k_proxy_variables;
    run.timeout = std::chrono::seconds(60);
    return run;
  }

  httplib::Result post() {
    httplib::Client client("127.0.0.1", m_port);
    client.set_read_timeout(20, 0);
    return client.Post("/v1/chat/completions", R"({"model":"m"})", "application/json");
  }

  ChildProcess& child() { return m_child; }
  const std::string& path() const { return m_path; }

  // SIGTERM, then everything it wrote.
  std::string stop() {
    m_child.send_signal(SIGTERM);
    RunResult result = m_child.wait();
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.all_output();
  }

private:
  TempDir m_dir;
  std::string m_path;
  int m_port;
  ChildProcess m_child;
};

void expect_ok(const httplib::Result& res) {
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, R"({"ok":true})");
}

std::string base64(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

TEST(ProxyTunnel, ARequestThroughTheProxyReachesTheTlsUpstreamIntact) {
  TinyProxy proxy;
  HttpsUpstream upstream;
  Serve serve(
      pool(proxy_line("http://" + proxy.address()), {{url_of("localhost", upstream), upstream.ca_file()}}));
  expect_ok(serve.post());
  EXPECT_EQ(upstream.authorizations(), std::vector<std::string>{"Bearer " + test_key(0)});
  // The tunnel was used: the proxy saw CONNECT for the upstream (and the
  // upstream's certificate, checked through it, was for localhost).
  EXPECT_TRUE(proxy.wait_for_log(fmt::format("CONNECT localhost:{} HTTP/1.1", upstream.port())))
      << proxy.log();
  std::string output = serve.stop();
  EXPECT_EQ(output.find(test_key(0)), std::string::npos);
}

TEST(ProxyTunnel, AProxyRefusingTheTunnelFailsOverToTheNextKey) {
  HttpsUpstream refused;
  HttpsUpstream allowed;
  TinyProxyOptions only_allowed;
  only_allowed.connect_ports = {allowed.port()};
  TinyProxy proxy(only_allowed);
  Serve serve(
      pool(proxy_line("http://" + proxy.address()), {{url_of("localhost", refused), refused.ca_file()},
                                                     {url_of("localhost", allowed), allowed.ca_file()}}));
  expect_ok(serve.post());
  EXPECT_TRUE(refused.authorizations().empty());
  EXPECT_EQ(allowed.authorizations(), std::vector<std::string>{"Bearer " + test_key(1)});
  EXPECT_TRUE(proxy.wait_for_log(fmt::format("Refused CONNECT method on port {}", refused.port())))
      << proxy.log();
  std::string refusal = fmt::format("proxy {} refused CONNECT: 403", proxy.address());
  EXPECT_TRUE(serve.child().wait_for_stderr(refusal)) << serve.child().err();
  std::string output = serve.stop();
  EXPECT_NE(output.find("chain=k0:connect"), std::string::npos) << output;
}

TEST(ProxyTunnel, ProxyCredentialsWorkAndNeverAppearInOutput) {
  // tinyproxy's BasicAuth takes [-a-z0-9._] only; the URL percent-encodes
  // the '-' to show that keyshim decodes it.
  const std::string user = "keyshim-user";
  const std::string password = "proxy-Pass.7781";
  TinyProxyOptions with_auth;
  with_auth.user = user;
  with_auth.password = password;
  TinyProxy proxy(with_auth);
  HttpsUpstream upstream;
  std::vector<PoolKey> keys = {{url_of("localhost", upstream), upstream.ca_file()}};
  std::string url = fmt::format("http://keyshim%2Duser:proxy%2DPass.7781@{}", proxy.address());
  std::vector<std::string> forbidden = {password, "Pass.7781", "proxy%2DPass", "keyshim%2Duser",
                                        base64(user + ":" + password)};

  std::string output;
  {
    Serve serve(pool(proxy_line(url), keys));
    expect_ok(serve.post());
    RunResult check = run_binary({KEYSHIM_BINARY, "check", "-c", serve.path()}, Serve::options({}));
    EXPECT_EQ(check.exit_code, 0) << check.all_output();
    output = serve.stop() + check.all_output();
  }
  {
    // The same proxy with a wrong password: refused (tinyproxy answers 401
    // where the standard says 407), a connect error, and still nothing of
    // either password in the output.
    std::string wrong = fmt::format("http://keyshim-user:proxy-Pass.7782@{}", proxy.address());
    Serve serve(pool(proxy_line(wrong), keys));
    auto res = serve.post();
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 502) << res->body;
    EXPECT_NE(res->body.find("k0: connect error"), std::string::npos) << res->body;
    EXPECT_TRUE(
        serve.child().wait_for_stderr("refused CONNECT: 401 Unauthorized; check the user and password"))
        << serve.child().err();
    forbidden.push_back("Pass.7782");
    output += res->body + serve.stop();
  }
  EXPECT_EQ(upstream.authorizations().size(), 1u);
  for (const std::string& secret : forbidden) {
    EXPECT_EQ(output.find(secret), std::string::npos) << secret << " in:\n" << output;
  }
  EXPECT_EQ(output.find(user + ":"), std::string::npos) << output;
}

TEST(ProxyEnvironment, HttpsProxyCarriesUpstreamsThatAreNotLoopback) {
  TinyProxy proxy;
  HttpsUpstream upstream("localhost", "IP:0.0.0.0");
  Serve serve(pool("", {{url_of("0.0.0.0", upstream), upstream.ca_file()}}),
              {{"HTTPS_PROXY", "http://" + proxy.address()}});
  expect_ok(serve.post());
  EXPECT_TRUE(proxy.wait_for_log(fmt::format("CONNECT 0.0.0.0:{} HTTP/1.1", upstream.port()))) << proxy.log();
  serve.stop();
}

TEST(ProxyEnvironment, NoProxyListsHostsThatGoDirect) {
  TinyProxy proxy;
  HttpsUpstream upstream("localhost", "IP:0.0.0.0");
  Serve serve(pool("", {{url_of("0.0.0.0", upstream), upstream.ca_file()}}),
              {{"https_proxy", "http://" + proxy.address()}, {"no_proxy", "example.com, 0.0.0.0"}});
  expect_ok(serve.post());
  // Had keyshim used the proxy, the proxy would have logged the request
  // before the answer could arrive.
  EXPECT_EQ(proxy.log().find("CONNECT 0.0.0.0"), std::string::npos) << proxy.log();
  serve.stop();
}

TEST(ProxyEnvironment, AnUnreachableProxyIsAConnectErrorNamingIt) {
  HttpsUpstream upstream("localhost", "IP:0.0.0.0");
  std::string dead = fmt::format("127.0.0.1:{}", unused_loopback_port());
  Serve serve(pool("", {{url_of("0.0.0.0", upstream), upstream.ca_file()}}),
              {{"HTTPS_PROXY", "http://" + dead}});
  auto res = serve.post();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 502) << res->body;
  EXPECT_NE(res->body.find("k0: connect error"), std::string::npos) << res->body;
  EXPECT_TRUE(serve.child().wait_for_stderr("cannot reach proxy " + dead)) << serve.child().err();
  EXPECT_TRUE(upstream.authorizations().empty());
  serve.stop();
}

TEST(ProxyEnvironment, EmptyProxySettingIgnoresTheEnvironment) {
  HttpsUpstream upstream("localhost", "IP:0.0.0.0");
  std::string dead = fmt::format("http://127.0.0.1:{}", unused_loopback_port());
  Serve serve(pool("proxy = ''\n", {{url_of("0.0.0.0", upstream), upstream.ca_file()}}),
              {{"HTTPS_PROXY", dead}, {"https_proxy", dead}});
  expect_ok(serve.post());
  serve.stop();
}

TEST(ProxyEnvironment, LoopbackUpstreamsNeverUseTheEnvironmentProxy) {
  HttpsUpstream upstream;
  std::string dead = fmt::format("http://127.0.0.1:{}", unused_loopback_port());
  Serve serve(pool("", {{url_of("localhost", upstream), upstream.ca_file()}}),
              {{"HTTPS_PROXY", dead}, {"https_proxy", dead}});
  expect_ok(serve.post());
  serve.stop();
}

TEST(ProxyEnvironment, ABadProxyUrlIsALoadProblemNamingTheVariable) {
  TempDir dir;
  std::string path = dir.write("keys.toml", pool("", {{"https://0.0.0.0:9", ""}}), 0600);
  RunResult check = run_binary({KEYSHIM_BINARY, "check", "-c", path},
                               Serve::options({{"HTTPS_PROXY", "socks5://mallory:hunter2@proxy:1080"}}));
  EXPECT_EQ(check.exit_code, 1) << check.all_output();
  EXPECT_NE(check.err.find("the environment variable HTTPS_PROXY is a SOCKS proxy"), std::string::npos)
      << check.err;
  EXPECT_EQ(check.all_output().find("hunter2"), std::string::npos) << check.all_output();
  EXPECT_EQ(check.all_output().find("mallory"), std::string::npos) << check.all_output();
}

} // namespace
} // namespace keyshim::test
