// Paths that must never reach an upstream, through the real server: probes
// of a pool's root (Claude Code sends `HEAD /anthropic` at start), answered
// by keyshim so that no key is spent or blamed, and targets with dot
// segments, which a server would resolve outside the pool's base path
// (issue 18 item 4, issue 19 bug 5).
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

namespace keyshim::test {
namespace {

const PoolKey k_roots_anthropic{"ant-main", "sk-ant-roots-0123456789abcdef"};
const PoolKey k_alpha{"alpha-main", "sk-alpha-roots-0123456789abcdef"};
const PoolKey k_beta{"beta-main", "sk-beta-roots-0123456789abcdef"};

httplib::Client roots_client_for(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  return client;
}

pool::KeyHealth first_key_health(Shim& shim, const std::string& pool) {
  for (const relay::ServedPool& served : shim.server().state()->pools) {
    if (served.config->name == pool) {
      return served.keys->health(0);
    }
  }
  ADD_FAILURE() << "no pool " << pool;
  return {};
}

std::string error_field(const std::string& body, const char* field) {
  std::optional<util::Json> doc = util::parse_json(body);
  const util::Json* error = doc ? doc->find("error") : nullptr;
  return error ? error->string_at(field).value_or("") : "";
}

// An Anthropic-like upstream that answers 401 to anything without the
// `anthropic-version` header, as a provider may answer a bare probe.
class ProbedPool : public ::testing::Test {
protected:
  ProbedPool() { m_upstream.require_key("anthropic-version", "2023-06-01"); }

  FakeUpstream m_upstream;
  Shim m_shim{pool_toml(1) + pool_section("anthropic", m_upstream.base_url(), "auth = \"x-api-key\"\n",
                                          {k_roots_anthropic}),
              m_upstream.base_url()};
};

TEST_F(ProbedPool, HeadAndGetOnAPoolsRootAreAnsweredLocallyAndCostNoKey) {
  httplib::Client client = roots_client_for(m_shim.port());
  for (const char* target : {"/anthropic", "/anthropic/", "/anthropic?beta=true", "/", "/?x=1"}) {
    auto head = client.Head(target);
    ASSERT_TRUE(head) << target;
    EXPECT_EQ(head->status, 200) << target;
    auto get = client.Get(target);
    ASSERT_TRUE(get) << target;
    EXPECT_EQ(get->status, 200) << target;
    EXPECT_EQ(get->body, "") << target;
  }
  EXPECT_EQ(m_upstream.request_count(), 0u) << "a probe reached the upstream";
  EXPECT_EQ(first_key_health(m_shim, "anthropic").state, pool::KeyState::available);
  EXPECT_EQ(first_key_health(m_shim, "default").state, pool::KeyState::available);

  auto real =
      client.Post("/anthropic/v1/messages", {{"anthropic-version", "2023-06-01"}}, "{}", "application/json");
  ASSERT_TRUE(real);
  EXPECT_EQ(real->status, 200) << real->body;
  ASSERT_EQ(m_upstream.request_count(), 1u);
  EXPECT_EQ(m_upstream.seen()[0].target, "/v1/messages");
  EXPECT_EQ(m_upstream.seen()[0].header("x-api-key"), k_roots_anthropic.secret);
}

TEST_F(ProbedPool, AProbeOnAKeptAliveConnectionLeavesItUsable) {
  RawConnection conn(m_shim.port());
  conn.send("HEAD /anthropic HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n\r\n");
  ASSERT_TRUE(conn.read_until("\r\n\r\n"));
  EXPECT_EQ(conn.received().rfind("HTTP/1.1 200", 0), 0u) << conn.received();
  EXPECT_NE(conn.received().find("Content-Length: 0\r\n"), std::string::npos) << conn.received();
  conn.send(make_request("POST", "/anthropic/v1/messages", "{}",
                         "anthropic-version: 2023-06-01\r\nConnection: close\r\n"));
  ASSERT_TRUE(conn.read_to_close());
  std::string second = conn.received().substr(conn.received().find("\r\n\r\n") + 4);
  EXPECT_EQ(parse_response(second).status, 200) << second;
  EXPECT_EQ(m_upstream.request_count(), 1u);
}

TEST(PoolRootsRelay, OtherMethodsOnTheRootAndPathsBelowItAreStillRelayed) {
  FakeUpstream upstream;
  Shim shim("[server]\n" + pool_section("anthropic", upstream.base_url(), "", {k_roots_anthropic}), "");
  httplib::Client client = roots_client_for(shim.port());
  auto post = client.Post("/anthropic", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 200);
  auto models = client.Get("/anthropic/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  ASSERT_EQ(upstream.request_count(), 2u);
  EXPECT_EQ(upstream.seen()[0].method, "POST");
  EXPECT_EQ(upstream.seen()[0].target, "/");
  EXPECT_EQ(upstream.seen()[1].target, "/v1/models");
}

// Two pools under one host, as a gateway serves several APIs: a dot segment
// in a request for alpha would reach beta's API with alpha's key.
class DotSegments : public ::testing::Test {
protected:
  // Sends `target` alone on a connection and checks the one refusal.
  void expect_refused(const std::string& target) {
    SCOPED_TRACE("target: " + target);
    RawConnection conn(m_shim.port());
    conn.send(make_request("POST", target, "{}"));
    ASSERT_TRUE(conn.read_to_close(5s)) << "a refusal closes the connection";
    RawResponse res = parse_response(conn.received());
    EXPECT_EQ(res.status, 400) << conn.received();
    EXPECT_EQ(error_field(res.body, "type"), "keyshim_bad_request") << res.body;
    EXPECT_EQ(error_field(res.body, "code"), "http_400") << res.body;
    EXPECT_NE(error_field(res.body, "message").find("segment"), std::string::npos) << res.body;
  }

  FakeUpstream m_upstream;
  Shim m_shim{"[server]\n" + pool_section("alpha", m_upstream.base_url() + "/gw/alpha", "", {k_alpha}) +
                  pool_section("beta", m_upstream.base_url() + "/gw/beta", "", {k_beta}),
              ""};
};

TEST_F(DotSegments, TargetsWithDotSegmentsAreRefused400AndNeverForwarded) {
  for (const char* target :
       {"/alpha/../beta/v1/messages", "/alpha/%2e%2e/beta/v1/messages", "/alpha/.%2E/beta/v1/messages",
        "/alpha/%2E%2e/beta/v1/messages", "/alpha/./v1/messages", "/alpha/..%2Fbeta/v1/messages",
        "/alpha/..\\beta/v1/messages", "/alpha/..;/beta/v1/messages", "/alpha/v1/..?x=1", "/alpha/.."}) {
    expect_refused(target);
  }
  EXPECT_EQ(m_upstream.request_count(), 0u);
  EXPECT_EQ(first_key_health(m_shim, "alpha").state, pool::KeyState::available);
}

TEST_F(DotSegments, APathWithoutDotSegmentsStillReachesItsOwnPool) {
  auto res = roots_client_for(m_shim.port()).Post("/alpha/v1/messages.json", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(m_upstream.request_count(), 1u);
  EXPECT_EQ(m_upstream.seen()[0].target, "/gw/alpha/v1/messages.json");
  EXPECT_EQ(m_upstream.seen()[0].header("Authorization"), "Bearer " + k_alpha.secret);
}

TEST_F(DotSegments, AnEncodedSlashNeverSplitsTheSegmentThatNamesThePool) {
  // The pool is named by the first segment as written: /alpha%2Fv1 is not
  // pool alpha, and this file has no default pool to take it.
  RawConnection conn(m_shim.port());
  conn.send(make_request("POST", "/alpha%2Fv1/messages", "{}", "Connection: close\r\n"));
  ASSERT_TRUE(conn.read_to_close());
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 404) << conn.received();
  EXPECT_EQ(error_field(res.body, "code"), "unknown_pool") << res.body;
  EXPECT_EQ(m_upstream.request_count(), 0u);
}

} // namespace
} // namespace keyshim::test
