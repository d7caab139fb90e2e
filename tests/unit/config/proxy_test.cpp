// The `proxy` setting and the proxy environment, resolved by curl's rules
// through an injected lookup (no setenv).
#include "config/config.hpp"
#include "config/loader.hpp"
#include "config/proxy.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace keyshim::config;

namespace {

ProxyUrl proxy(const std::string& text) {
  std::string error;
  std::optional<ProxyUrl> url = parse_proxy_url(text, error);
  EXPECT_TRUE(url.has_value()) << text << ": " << error;
  EXPECT_TRUE(url.has_value() == error.empty()) << text;
  return url.value_or(ProxyUrl{});
}

std::string proxy_error(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_proxy_url(text, error)) << text;
  return error;
}

UpstreamUrl upstream(const std::string& text) {
  std::string error;
  std::optional<UpstreamUrl> url = parse_upstream_url(text, error);
  EXPECT_TRUE(url.has_value()) << text << ": " << error;
  return url.value_or(UpstreamUrl{});
}

// A fake environment; every lookup is recorded.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::vector<std::string> asked;

  EnvLookup lookup() {
    return [this](const char* name) -> const char* {
      asked.emplace_back(name);
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

// The proxy chosen for `base_url` with no setting, as "host:port" or "direct".
std::string from_env(FakeEnv& env, const std::string& base_url) {
  ProxyChoice choice = choose_proxy(upstream(base_url), std::nullopt, env.lookup());
  EXPECT_EQ(choice.problem, "");
  return choice.proxy ? choice.proxy->authority() : "direct";
}

} // namespace

TEST(ProxyUrl, ParsesHostPortAndDefaultsToCurlsPort1080) {
  ProxyUrl url = proxy("http://proxy.corp.example:3128");
  EXPECT_EQ(url.host, "proxy.corp.example");
  EXPECT_EQ(url.port, 3128);
  EXPECT_FALSE(url.authorization);
  EXPECT_EQ(url.text(), "http://proxy.corp.example:3128");
  EXPECT_EQ(proxy("http://Proxy.Corp").port, 1080);
  EXPECT_EQ(proxy("http://Proxy.Corp").host, "proxy.corp");
  EXPECT_EQ(proxy("HTTP://10.0.0.1:8080/").authority(), "10.0.0.1:8080");
}

TEST(ProxyUrl, BareHostPortIsAnHttpProxyAsInCurl) {
  EXPECT_EQ(proxy("proxy.corp:3128").text(), "http://proxy.corp:3128");
  EXPECT_EQ(proxy("10.1.2.3").text(), "http://10.1.2.3:1080");
  EXPECT_EQ(proxy("  proxy.corp:3128\n").authority(), "proxy.corp:3128");
}

TEST(ProxyUrl, Ipv6HostsNeedBrackets) {
  ProxyUrl url = proxy("http://[::1]:3128");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.authority(), "[::1]:3128");
  EXPECT_EQ(proxy("[FD00::5]").text(), "http://[fd00::5]:1080");
  EXPECT_NE(proxy_error("http://::1:3128").find("brackets"), std::string::npos);
  EXPECT_NE(proxy_error("http://[::1:3128").find("unbalanced"), std::string::npos);
  EXPECT_NE(proxy_error("http://[proxy.corp]:3128").find("invalid host"), std::string::npos);
}

TEST(ProxyUrl, CredentialsArePercentDecodedIntoABasicAuthorization) {
  // base64("user:p@ss:w/rd") = dXNlcjpwQHNzOncvcmQ=
  ProxyUrl url = proxy("http://user:p%40ss:w%2Frd@proxy.corp:3128");
  ASSERT_TRUE(url.authorization);
  EXPECT_EQ(url.authorization->reveal(), "Basic dXNlcjpwQHNzOncvcmQ=");
  EXPECT_EQ(url.host, "proxy.corp");
  // '+' is a plus, not a space: this is not form encoding.
  EXPECT_EQ(proxy("http://a:b+c@p").authorization->reveal(), "Basic YTpiK2M="); // a:b+c
  // A user without a password, and a raw '@' in the password (the last '@' ends them).
  EXPECT_EQ(proxy("http://alice@p").authorization->reveal(), "Basic YWxpY2U6");   // alice:
  EXPECT_EQ(proxy("http://a:b@c@p:1").authorization->reveal(), "Basic YTpiQGM="); // a:b@c
}

TEST(ProxyUrl, TextNeverShowsCredentials) {
  ProxyUrl url = proxy("http://alice:s3cret-Pa55@proxy.corp:3128");
  EXPECT_EQ(url.text(), "http://***@proxy.corp:3128");
  EXPECT_EQ(url.authority(), "proxy.corp:3128");
}

TEST(ProxyUrl, HttpsAndSocksProxiesAreRefusedNamingWhatWorks) {
  for (const char* text :
       {"https://proxy.corp:443", "socks5://proxy.corp:1080", "socks5h://p:1", "socks4a://p", "ftp://p:21"}) {
    std::string error = proxy_error(text);
    EXPECT_NE(error.find("http://[user:password@]host[:port]"), std::string::npos) << text << ": " << error;
  }
  EXPECT_NE(proxy_error("https://p").find("https:// proxy"), std::string::npos);
  EXPECT_NE(proxy_error("socks5://p").find("SOCKS"), std::string::npos);
}

TEST(ProxyUrl, MalformedUrlsAreRefused) {
  EXPECT_NE(proxy_error("").find("empty"), std::string::npos);
  EXPECT_NE(proxy_error("http://").find("no host"), std::string::npos);
  EXPECT_NE(proxy_error("http://user:pw@").find("no host"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:0").find("invalid port"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:65536").find("invalid port"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:").find("invalid port"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:80x").find("invalid port"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:3128/path").find("path"), std::string::npos);
  EXPECT_NE(proxy_error("http://p:3128?x=1").find("path"), std::string::npos);
  EXPECT_NE(proxy_error("http://pro xy:3128").find("invalid host"), std::string::npos);
  EXPECT_NE(proxy_error("http://@p:3128").find("empty user"), std::string::npos);
  EXPECT_NE(proxy_error("http://u:%zz@p").find("%-escape"), std::string::npos);
  EXPECT_NE(proxy_error("http://u:ab%4@p").find("%-escape"), std::string::npos);
}

TEST(ProxyUrl, ErrorsNeverQuoteTheUrl) {
  // The user part may be a password: no message repeats any of it.
  for (const char* text : {"http://alice:hunter2-secret@:3128", "http://alice:hunter2-secret@p:99999",
                           "socks5://alice:hunter2-secret@p", "http://alice:hunter2-secret%zz@p",
                           "http://alice:hunter2-secret@p/x", "hunter2-secret://p"}) {
    std::string error = proxy_error(text);
    EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
    EXPECT_EQ(error.find("alice"), std::string::npos) << error;
  }
}

TEST(ProxySetting, EmptyMeansNoProxy) {
  std::string error;
  std::optional<ProxySetting> none = parse_proxy_setting("", error);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->url);
  std::optional<ProxySetting> some = parse_proxy_setting("http://p:3128", error);
  ASSERT_TRUE(some && some->url);
  EXPECT_EQ(some->url->authority(), "p:3128");
  EXPECT_FALSE(parse_proxy_setting("socks5://p", error));
}

TEST(NoProxy, AsteriskAloneMatchesEverything) {
  EXPECT_TRUE(no_proxy_matches("*", "api.openai.com"));
  // As in curl, "*" is special only as the whole value, blanks included.
  EXPECT_FALSE(no_proxy_matches(" * ", "10.0.0.1"));
  EXPECT_FALSE(no_proxy_matches("*,example.com", "api.openai.com"));
  EXPECT_FALSE(no_proxy_matches("*.openai.com", "api.openai.com"));
}

TEST(NoProxy, HostMatchesItselfAndItsSubdomainsWithOrWithoutLeadingDot) {
  EXPECT_TRUE(no_proxy_matches("openai.com", "openai.com"));
  EXPECT_TRUE(no_proxy_matches("openai.com", "api.openai.com"));
  EXPECT_TRUE(no_proxy_matches(".openai.com", "api.openai.com"));
  EXPECT_TRUE(no_proxy_matches(".openai.com", "openai.com"));
  EXPECT_TRUE(no_proxy_matches("OpenAI.COM", "api.openai.com"));
  EXPECT_TRUE(no_proxy_matches("openai.com.", "api.openai.com."));
  EXPECT_FALSE(no_proxy_matches("openai.com", "notopenai.com"));
  EXPECT_FALSE(no_proxy_matches("api.openai.com", "openai.com"));
  EXPECT_FALSE(no_proxy_matches("openai.com", "openai.com.evil.example"));
  EXPECT_FALSE(no_proxy_matches("", "openai.com"));
}

TEST(NoProxy, EntriesAreSeparatedByCommasOrBlanks) {
  EXPECT_TRUE(no_proxy_matches("localhost,.corp,anthropic.com", "api.anthropic.com"));
  EXPECT_TRUE(no_proxy_matches("localhost, .corp , anthropic.com", "x.corp"));
  EXPECT_TRUE(no_proxy_matches("localhost .corp\tanthropic.com", "anthropic.com"));
  EXPECT_TRUE(no_proxy_matches(",,anthropic.com,,", "anthropic.com"));
  EXPECT_FALSE(no_proxy_matches("localhost,.corp", "anthropic.com"));
}

TEST(NoProxy, AnEntryWithAPortMatchesNothingAsInCurl) {
  // curl compares host names only: the upstream's port plays no part, and
  // "host:port" is compared as written.
  EXPECT_FALSE(no_proxy_matches("api.openai.com:443", "api.openai.com"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.1:443", "10.0.0.1"));
}

TEST(NoProxy, IpLiteralsMatchExactlyOrByCidr) {
  EXPECT_TRUE(no_proxy_matches("10.1.2.3", "10.1.2.3"));
  EXPECT_FALSE(no_proxy_matches("10.1.2.3", "10.1.2.30"));
  EXPECT_FALSE(no_proxy_matches("10.1.2", "10.1.2.3")); // no suffix matching for addresses
  EXPECT_TRUE(no_proxy_matches("10.0.0.0/8", "10.200.3.4"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.0/8", "11.0.0.1"));
  EXPECT_TRUE(no_proxy_matches("192.168.0.0/17", "192.168.127.1"));
  EXPECT_FALSE(no_proxy_matches("192.168.0.0/17", "192.168.128.1"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.0/33", "10.0.0.0"));
  EXPECT_TRUE(no_proxy_matches("fd00::/8", "fd12::1"));
  EXPECT_TRUE(no_proxy_matches("2001:db8::1", "2001:DB8:0::1"));
  EXPECT_FALSE(no_proxy_matches("[2001:db8::1]", "2001:db8::1")); // curl wants IPv6 entries bare
  EXPECT_TRUE(no_proxy_matches("2001:db8::1", "[2001:db8::1]"));
  EXPECT_FALSE(no_proxy_matches("2001:db8::1", "2001:db8::2"));
  // A name entry never matches an address, nor an address entry a name.
  EXPECT_FALSE(no_proxy_matches("example.com", "10.0.0.1"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.1", "example.com"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.0/8", "10.0.0.1.nip.io"));
}

TEST(ProxyEnvironment, HttpsUpstreamsUseLowercaseThenUppercaseHttpsProxy) {
  FakeEnv env;
  env.vars = {{"HTTPS_PROXY", "http://upper:3128"}};
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "upper:3128");
  env.vars["https_proxy"] = "http://lower:3128";
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "lower:3128");
}

TEST(ProxyEnvironment, AnEmptyVariableCountsAsUnsetAsInCurl) {
  FakeEnv env;
  env.vars = {{"https_proxy", ""}, {"HTTPS_PROXY", "http://upper:3128"}};
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "upper:3128");
  env.vars = {{"HTTPS_PROXY", ""}};
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "direct");
  env.vars = {{"HTTPS_PROXY", "http://upper:3128"}, {"no_proxy", ""}, {"NO_PROXY", "openai.com"}};
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "direct");
}

TEST(ProxyEnvironment, HttpProxyVariablesDoNotApplyToHttpsUpstreams) {
  FakeEnv env;
  env.vars = {{"http_proxy", "http://plain:3128"},
              {"HTTP_PROXY", "http://plain:3128"},
              {"ALL_PROXY", "http://all:3128"},
              {"all_proxy", "http://all:3128"}};
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "direct");
}

TEST(ProxyEnvironment, HttpUpstreamsReadOnlyLowercaseHttpProxy) {
  // Uppercase HTTP_PROXY is what CGI makes of a request's "Proxy:" header
  // (httpoxy), so curl ignores it, and so does keyshim. http:// upstreams are
  // loopback only, where the environment never applies, so this is the rule
  // on its own.
  FakeEnv env;
  env.vars = {{"HTTP_PROXY", "http://injected:3128"}};
  UpstreamUrl plain{"http", "models.internal", 80, ""};
  EXPECT_FALSE(choose_proxy(plain, std::nullopt, env.lookup()).proxy);
  for (const std::string& name : env.asked) {
    EXPECT_NE(name, "HTTP_PROXY");
  }
  env.vars["http_proxy"] = "http://lower:3128";
  ProxyChoice choice = choose_proxy(plain, std::nullopt, env.lookup());
  ASSERT_TRUE(choice.proxy);
  EXPECT_EQ(choice.proxy->authority(), "lower:3128");
}

TEST(ProxyEnvironment, NeverAppliesToLoopbackUpstreams) {
  FakeEnv env;
  env.vars = {{"https_proxy", "http://proxy:3128"}, {"http_proxy", "http://proxy:3128"}};
  EXPECT_EQ(from_env(env, "https://localhost:8443"), "direct");
  EXPECT_EQ(from_env(env, "https://127.0.0.1:8443"), "direct");
  EXPECT_EQ(from_env(env, "https://127.9.9.9"), "direct");
  EXPECT_EQ(from_env(env, "https://[::1]:8443"), "direct");
  EXPECT_EQ(from_env(env, "http://127.0.0.1:9000/v1"), "direct");
  EXPECT_TRUE(env.asked.empty()); // not even read
}

TEST(ProxyEnvironment, NoProxyLowercaseThenUppercaseExcludesHosts) {
  FakeEnv env;
  env.vars = {{"HTTPS_PROXY", "http://proxy:3128"}, {"NO_PROXY", ".internal"}};
  EXPECT_EQ(from_env(env, "https://llm.internal"), "direct");
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "proxy:3128");
  env.vars["no_proxy"] = "openai.com"; // lowercase wins over NO_PROXY
  EXPECT_EQ(from_env(env, "https://llm.internal"), "proxy:3128");
  EXPECT_EQ(from_env(env, "https://api.openai.com"), "direct");
  env.vars["no_proxy"] = "*";
  EXPECT_EQ(from_env(env, "https://api.anthropic.com"), "direct");
}

TEST(ProxyEnvironment, ABadUrlIsAProblemNamingTheVariableNotItsValue) {
  FakeEnv env;
  env.vars = {{"HTTPS_PROXY", "socks5://bob:pa55word@proxy:1080"}};
  ProxyChoice choice = choose_proxy(upstream("https://api.openai.com"), std::nullopt, env.lookup());
  EXPECT_FALSE(choice.proxy);
  EXPECT_NE(choice.problem.find("HTTPS_PROXY"), std::string::npos) << choice.problem;
  EXPECT_NE(choice.problem.find("SOCKS"), std::string::npos) << choice.problem;
  EXPECT_NE(choice.problem.find("proxy = \"\""), std::string::npos) << choice.problem;
  EXPECT_EQ(choice.problem.find("pa55word"), std::string::npos) << choice.problem;
  EXPECT_EQ(choice.problem.find("bob"), std::string::npos) << choice.problem;
  // Unused, it is no problem: no_proxy covers the host.
  env.vars["no_proxy"] = "openai.com";
  EXPECT_EQ(choose_proxy(upstream("https://api.openai.com"), std::nullopt, env.lookup()).problem, "");
}

TEST(ProxySettingChoice, OverridesTheEnvironmentForEveryUpstreamLoopbackIncluded) {
  FakeEnv env;
  env.vars = {{"https_proxy", "http://from-env:3128"}};
  ProxySetting named{proxy("http://named:8080")};
  for (const char* base : {"https://api.openai.com", "https://localhost:8443", "http://127.0.0.1:9000"}) {
    ProxyChoice choice = choose_proxy(upstream(base), named, env.lookup());
    ASSERT_TRUE(choice.proxy) << base;
    EXPECT_EQ(choice.proxy->authority(), "named:8080") << base;
  }
  env.vars["no_proxy"] = "*"; // no_proxy is for the environment's proxy only
  EXPECT_TRUE(choose_proxy(upstream("https://api.openai.com"), named, env.lookup()).proxy);
}

TEST(ProxySettingChoice, EmptySettingIgnoresTheEnvironment) {
  FakeEnv env;
  env.vars = {{"https_proxy", "socks5://not-even-valid"}};
  ProxyChoice choice = choose_proxy(upstream("https://api.openai.com"), ProxySetting{}, env.lookup());
  EXPECT_FALSE(choice.proxy);
  EXPECT_EQ(choice.problem, "");
  EXPECT_TRUE(env.asked.empty());
}

TEST(ProxySettingChoice, PlainHttpUpstreamThroughARemoteProxyIsAProblem) {
  // The key would travel unencrypted to the proxy (and "127.0.0.1" would be
  // the proxy's own loopback).
  ProxySetting remote{proxy("http://proxy.corp:3128")};
  ProxyChoice choice = choose_proxy(upstream("http://127.0.0.1:9000"), remote, {});
  EXPECT_NE(choice.problem.find("unencrypted"), std::string::npos) << choice.problem;
  ProxySetting local{proxy("http://127.0.0.1:3128")};
  EXPECT_EQ(choose_proxy(upstream("http://127.0.0.1:9000"), local, {}).problem, "");
  EXPECT_EQ(choose_proxy(upstream("https://api.openai.com"), remote, {}).problem, "");
}

TEST(ProxyLoading, SettingIsResolvedIntoEveryKey) {
  LoadResult result = load_pool_text("[upstream]\nproxy = 'http://u:p@127.0.0.1:3128'\n"
                                     "[[keys]]\nkey = 'sk-a'\n"
                                     "[[keys]]\nkey = 'sk-b'\nbase_url = 'https://api.anthropic.com'\n",
                                     "keys.toml");
  ASSERT_TRUE(result.ok()) << result.problems_text();
  for (const KeyConfig& key : result.config->pools.at(0).keys) {
    ASSERT_TRUE(key.proxy);
    EXPECT_EQ(key.proxy->text(), "http://***@127.0.0.1:3128");
    ASSERT_TRUE(key.proxy->authorization);
    EXPECT_EQ(key.proxy->authorization->reveal(), "Basic dTpw");
  }
}

TEST(ProxyLoading, EmptySettingMeansDirect) {
  LoadResult result = load_pool_text("[upstream]\nproxy = ''\n[[keys]]\nkey = 'sk-a'\n", "keys.toml");
  ASSERT_TRUE(result.ok()) << result.problems_text();
  ASSERT_TRUE(result.config->pools.at(0).upstream.proxy);
  EXPECT_FALSE(result.config->pools.at(0).upstream.proxy->url);
  EXPECT_FALSE(result.config->pools.at(0).keys[0].proxy);
}

TEST(ProxyLoading, BadSettingIsAPositionedProblemWithoutTheCredentials) {
  LoadResult result = load_pool_text(
      "[upstream]\nproxy = 'socks5://carol:t0ps3cret@proxy:1080'\n[[keys]]\nkey = 'sk-a'\n", "keys.toml");
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.problems.size(), 1u) << result.problems_text();
  EXPECT_EQ(result.problems[0].text().rfind("keys.toml:2:9: upstream: \"proxy\" is a SOCKS proxy", 0), 0u)
      << result.problems_text();
  EXPECT_EQ(result.problems_text().find("t0ps3cret"), std::string::npos);
  EXPECT_EQ(result.problems_text().find("carol"), std::string::npos);
}

TEST(ProxyLoading, RemoteProxyForAPlainHttpUpstreamIsReportedOnce) {
  LoadResult result = load_pool_text("[upstream]\nbase_url = 'http://127.0.0.1:9000'\n"
                                     "proxy = 'http://proxy.corp:3128'\n"
                                     "[[keys]]\nkey = 'sk-a'\n[[keys]]\nkey = 'sk-b'\n",
                                     "keys.toml");
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.problems.size(), 1u) << result.problems_text();
  EXPECT_NE(result.problems[0].message.find("unencrypted"), std::string::npos);
}

TEST(ProxyLoading, ProxyMustBeAString) {
  LoadResult result = load_pool_text("[upstream]\nproxy = 3128\n[[keys]]\nkey = 'sk-a'\n", "keys.toml");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.problems[0].text(), "keys.toml:2:9: upstream: \"proxy\" must be a string, not an integer");
}
