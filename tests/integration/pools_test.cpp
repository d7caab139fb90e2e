// Pools through the real server: one keyshim for several providers, each
// pool at /NAME with its own upstream, auth style and keys. What each
// upstream saw (target, credential), where unowned paths go, and reload
// matching pools by name. (/health, /status, usage: pool_reports_test.cpp.)
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>

namespace keyshim::test {
namespace {

util::Json pools_parsed(const std::string& body) {
  std::optional<util::Json> doc = util::parse_json(body);
  EXPECT_TRUE(doc) << body;
  return doc ? *doc : util::Json();
}

std::string error_code(const std::string& body) {
  util::Json doc = pools_parsed(body);
  const util::Json* error = doc.find("error");
  return error ? error->string_at("code").value_or("") : "";
}

pool::KeyHealth pools_health(Shim& shim, const std::string& pool, std::size_t key) {
  auto state = shim.server().state();
  for (const relay::ServedPool& served : state->pools) {
    if (served.config->name == pool) {
      return served.keys->health(key);
    }
  }
  ADD_FAILURE() << "no pool " << pool;
  return {};
}

httplib::Client pools_client_for(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  return client;
}

// Everything an upstream was sent, to look for a key that is not its own.
std::string everything_seen(const FakeUpstream& upstream) {
  std::string all;
  for (const SeenRequest& r : upstream.seen()) {
    all += r.method + " " + r.target + "\n";
    for (const auto& [name, value] : r.headers) {
      all += name + ": " + value + "\n";
    }
    all += r.body + "\n";
  }
  return all;
}

// ---- the issue's scenario, through the real binary

TEST(PoolsBinary, EachProviderGetsItsOwnRequestsWithOnlyItsOwnKey) {
  FakeUpstream openai;
  FakeUpstream anthropic;
  FakeUpstream gemini;
  // Each refuses (401) any request that lacks its own key in its own header.
  openai.require_key("Authorization", "Bearer " + k_openai_key.secret);
  anthropic.require_key("X-Api-Key", k_anthropic_key.secret);
  gemini.require_key("x-goog-api-key", k_gemini_key.secret);
  openai.push(json(200, R"({"from":"openai"})"));
  anthropic.push(json(200, R"({"from":"anthropic"})"));
  gemini.push(json(200, R"({"from":"gemini"})"));
  TempDir dir;
  std::string path = dir.write(
      "keys.toml", three_provider_pools(openai.base_url(), anthropic.base_url(), gemini.base_url()), 0600);
  int port = unused_loopback_port();
  RunOptions options;
  options.timeout = std::chrono::seconds(30);
  ChildProcess serve = ChildProcess::start(
      {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
  ASSERT_TRUE(serve.wait_for_stderr("listening on")) << serve.err();

  // Clients send their SDK's own placeholder credential; keyshim replaces it.
  httplib::Client client = pools_client_for(port);
  auto res = client.Post("/openai/v1/chat/completions", {{"Authorization", "Bearer placeholder"}},
                         R"({"model":"gpt"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"from":"openai"})");
  res = client.Post("/anthropic/v1/messages", {{"x-api-key", "placeholder"}}, R"({"model":"claude"})",
                    "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"from":"anthropic"})");
  res = client.Post("/gemini/v1beta/models/x:generateContent", {{"x-goog-api-key", "placeholder"}},
                    R"({"contents":[]})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"from":"gemini"})");

  ASSERT_EQ(openai.request_count(), 1u);
  ASSERT_EQ(anthropic.request_count(), 1u);
  ASSERT_EQ(gemini.request_count(), 1u);
  SeenRequest to_openai = openai.seen().at(0);
  EXPECT_EQ(to_openai.target, "/v1/chat/completions");
  EXPECT_EQ(to_openai.header("Authorization"), "Bearer " + k_openai_key.secret);
  EXPECT_FALSE(to_openai.has_header("x-api-key"));
  EXPECT_FALSE(to_openai.has_header("x-goog-api-key"));
  SeenRequest to_anthropic = anthropic.seen().at(0);
  EXPECT_EQ(to_anthropic.target, "/v1/messages");
  EXPECT_EQ(to_anthropic.header("x-api-key"), k_anthropic_key.secret);
  EXPECT_FALSE(to_anthropic.has_header("Authorization"));
  EXPECT_FALSE(to_anthropic.has_header("x-goog-api-key"));
  SeenRequest to_gemini = gemini.seen().at(0);
  EXPECT_EQ(to_gemini.target, "/v1beta/models/x:generateContent");
  EXPECT_EQ(to_gemini.header("x-goog-api-key"), k_gemini_key.secret);
  EXPECT_FALSE(to_gemini.has_header("Authorization"));
  EXPECT_FALSE(to_gemini.has_header("x-api-key"));
  struct Crossing {
    const FakeUpstream& upstream;
    std::vector<const PoolKey*> foreign;
  };
  for (const Crossing& c : {Crossing{openai, {&k_anthropic_key, &k_gemini_key}},
                            Crossing{anthropic, {&k_openai_key, &k_gemini_key}},
                            Crossing{gemini, {&k_openai_key, &k_anthropic_key}}}) {
    std::string seen = everything_seen(c.upstream);
    for (const PoolKey* key : c.foreign) {
      EXPECT_EQ(seen.find(key->secret), std::string::npos) << key->label << " reached another pool:\n"
                                                           << seen;
    }
  }

  ASSERT_TRUE(serve.wait_for_stderr(
      "POST /gemini/v1beta/models/x:generateContent 200 pool=gemini model=x key=gem-main"))
      << serve.err();
  EXPECT_NE(serve.err().find("POST /openai/v1/chat/completions 200 pool=openai model=gpt key=oa-main"),
            std::string::npos);
  EXPECT_NE(serve.err().find("POST /anthropic/v1/messages 200 pool=anthropic model=claude key=ant-main"),
            std::string::npos);
  serve.send_signal(SIGTERM);
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // Fingerprints show a key's first 4 characters; nothing after them may appear.
  for (const PoolKey* key : {&k_openai_key, &k_anthropic_key, &k_gemini_key}) {
    EXPECT_EQ(result.all_output().find(key->secret.substr(4)), std::string::npos)
        << key->label << " was printed";
  }
}

// ---- routing by the first path segment

TEST(PoolRouting, APathNoPoolOwnsIs404NamingThePoolsWhenThereIsNoDefaultPool) {
  FakeUpstream openai;
  FakeUpstream anthropic;
  FakeUpstream gemini;
  Shim shim(three_provider_pools(openai.base_url(), anthropic.base_url(), gemini.base_url()), "");
  httplib::Client client = pools_client_for(shim.port());
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(error_code(res->body), "unknown_pool");
  for (const char* route : {"/openai/", "/anthropic/", "/gemini/"}) {
    EXPECT_NE(res->body.find(route), std::string::npos) << res->body;
  }
  EXPECT_EQ(openai.request_count() + anthropic.request_count() + gemini.request_count(), 0u);
}

TEST(PoolRouting, APathNoPoolOwnsGoesToTheDefaultPoolUnchanged) {
  FakeUpstream fallback;
  FakeUpstream openai;
  Shim shim(pool_toml(1) + pool_section("openai", openai.base_url(), "", {k_openai_key}),
            fallback.base_url());
  auto res = pools_client_for(shim.port()).Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(fallback.request_count(), 1u);
  EXPECT_EQ(fallback.seen()[0].target, "/v1/models");
  EXPECT_EQ(fallback.seen()[0].header("Authorization"), "Bearer " + test_key(0));
  EXPECT_EQ(openai.request_count(), 0u);
}

TEST(PoolRouting, ThePoolNameMustBeTheWholeFirstSegmentAndAloneMeansTheRoot) {
  FakeUpstream fallback;
  FakeUpstream openai;
  Shim shim(pool_toml(1) + pool_section("openai", openai.base_url(), "", {k_openai_key}),
            fallback.base_url());
  httplib::Client client = pools_client_for(shim.port());
  // POST: GET and HEAD on a pool's root are answered by keyshim (pool_roots_test.cpp).
  for (const char* target : {"/openai", "/openai?x=1", "/openaix/v1/models", "/openai/v1/models"}) {
    auto res = client.Post(target, "{}", "application/json");
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->status, 200) << target;
  }
  std::vector<std::string> to_openai;
  for (const SeenRequest& r : openai.seen()) {
    to_openai.push_back(r.target);
  }
  EXPECT_EQ(to_openai, (std::vector<std::string>{"/", "/?x=1", "/v1/models"}));
  ASSERT_EQ(fallback.request_count(), 1u);
  EXPECT_EQ(fallback.seen()[0].target, "/openaix/v1/models");
  EXPECT_EQ(fallback.seen()[0].header("Authorization"), "Bearer " + test_key(0));
}

TEST(PoolRouting, AQueryAuthPoolGetsItsKeyInTheQueryInPlaceOfTheClients) {
  LogCapture logs(util::LogLevel::info);
  FakeUpstream gemini;
  Shim shim(
      "[server]\n" + pool_section("gemini", gemini.base_url(), "auth = \"query:key\"\n", {k_gemini_key}), "");
  auto res = pools_client_for(shim.port()).Get("/gemini/v1beta/models?key=placeholder&pageSize=5");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(gemini.request_count(), 1u);
  SeenRequest seen = gemini.seen()[0];
  EXPECT_EQ(seen.target, "/v1beta/models?pageSize=5&key=" + k_gemini_key.secret);
  EXPECT_FALSE(seen.has_header("x-goog-api-key"));
  EXPECT_FALSE(seen.has_header("Authorization"));
  // The log line has the path, never the query that carries the key.
  EXPECT_TRUE(logs.wait_for("GET /gemini/v1beta/models 200 pool=gemini key=gem-main")) << logs.text();
  EXPECT_FALSE(logs.contains(k_gemini_key.secret.substr(4)));
}

// ---- reload

TEST(PoolReload, PoolsAreMatchedByNameAndOnlyAKeyThatStaysInItsPoolKeepsItsHealth) {
  const PoolKey alpha_key{"a1", "sk-alpha-test-0123456789abcdef"};
  const PoolKey beta_key{"b1", "sk-beta-test-0123456789abcdef"};
  const PoolKey gamma_key{"g1", "sk-gamma-test-0123456789abcdef"};
  FakeUpstream alpha;
  FakeUpstream beta;
  FakeUpstream gamma;
  FakeUpstream fallback;
  alpha.push(json(429, "{}", {{"Retry-After", "3600"}}));
  beta.push(json(429, "{}", {{"Retry-After", "3600"}}));
  Shim shim("[server]\n" + pool_section("alpha", alpha.base_url(), "", {alpha_key}) +
                pool_section("beta", beta.base_url(), "", {beta_key}),
            fallback.base_url());
  httplib::Client client = pools_client_for(shim.port());
  ASSERT_EQ(client.Post("/alpha/v1/x", "{}", "application/json")->status, 429);
  ASSERT_EQ(client.Post("/beta/v1/x", "{}", "application/json")->status, 429);
  ASSERT_EQ(pools_health(shim, "alpha", 0).state, pool::KeyState::cooling);
  ASSERT_EQ(pools_health(shim, "beta", 0).state, pool::KeyState::cooling);

  // beta is removed, its cooling key moves into alpha, and gamma is added.
  std::string alpha_and_gamma = pool_section("alpha", alpha.base_url(), "", {alpha_key, beta_key}) +
                                pool_section("gamma", gamma.base_url(), "", {gamma_key});
  ASSERT_TRUE(shim.reload_with("[server]\n" + alpha_and_gamma));
  EXPECT_EQ(pools_health(shim, "alpha", 0).state, pool::KeyState::cooling);
  EXPECT_EQ(pools_health(shim, "alpha", 1).state, pool::KeyState::available) << "a moved key starts fresh";
  auto served = client.Post("/alpha/v1/x", "{}", "application/json");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
  ASSERT_EQ(alpha.request_count(), 2u);
  EXPECT_EQ(alpha.seen()[1].header("Authorization"), "Bearer " + beta_key.secret)
      << "a1 was tried while cooling";
  auto added = client.Post("/gamma/v1/x", "{}", "application/json");
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 200);
  ASSERT_EQ(gamma.request_count(), 1u);
  EXPECT_EQ(gamma.seen()[0].target, "/v1/x");
  EXPECT_EQ(gamma.seen()[0].header("Authorization"), "Bearer " + gamma_key.secret);
  auto removed = client.Post("/beta/v1/x", "{}", "application/json");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 404);
  EXPECT_EQ(error_code(removed->body), "unknown_pool");
  EXPECT_NE(removed->body.find("pools are at /alpha/, /gamma/\""), std::string::npos) << removed->body;
  EXPECT_EQ(beta.request_count(), 1u);

  // With a default pool the removed pool's paths fall to it, unchanged.
  ASSERT_TRUE(shim.reload_with(pool_toml(1) + alpha_and_gamma));
  auto fallen = client.Post("/beta/v1/x", "{}", "application/json");
  ASSERT_TRUE(fallen);
  EXPECT_EQ(fallen->status, 200);
  ASSERT_EQ(fallback.request_count(), 1u);
  EXPECT_EQ(fallback.seen()[0].target, "/beta/v1/x");
  EXPECT_EQ(beta.request_count(), 1u);
  EXPECT_EQ(pools_health(shim, "alpha", 0).state, pool::KeyState::cooling);
}

} // namespace
} // namespace keyshim::test
