// models / exclude_models through the real `keyshim serve`: a key never gets
// a request for a model it does not serve, a model no key of a pool serves
// is answered 404 in that pool's error shape without an upstream request,
// and a request naming no model goes to any key as before.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <memory>
#include <string>

namespace keyshim::test {
namespace {

// "wide" serves every model but gpt-5* (and the pool's dall-e*, which its
// own exclude_models list repeats since it replaces the pool's); "any"
// takes the pool's list.
const PoolKey k_wide{"wide", "sk-models-wide-0123456789abcdef",
                     "exclude_models = [\"gpt-5*\", \"dall-e*\"]\n"};
const PoolKey k_any{"any", "sk-models-any-0123456789abcdef"};
const PoolKey k_claude{"claude", "sk-ant-models-0123456789abcdef"};
const PoolKey k_gemini{"gem", "AIza-models-0123456789abcdef", "models = [\"gemini-2.5-*\"]\n"};

util::Json parsed(const std::string& body) {
  std::optional<util::Json> doc = util::parse_json(body);
  EXPECT_TRUE(doc) << body;
  return doc ? *doc : util::Json();
}

class ModelFilterBinary : public ::testing::Test {
protected:
  void SetUp() override {
    std::string text =
        "[server]\n" +
        pool_section("openai", openai.base_url(),
                     "strategy = \"round-robin\"\nexclude_models = [\"dall-e*\"]\n", {k_wide, k_any}) +
        pool_section("anthropic", anthropic.base_url(), "auth = \"x-api-key\"\nmodels = [\"claude-*\"]\n",
                     {k_claude}) +
        pool_section("gemini", gemini.base_url(), "auth = \"x-goog-api-key\"\n", {k_gemini});
    std::string path = dir.write("keys.toml", text, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    serve = std::make_unique<ChildProcess>(ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options));
    ASSERT_TRUE(serve->wait_for_stderr("listening on")) << serve->err();
  }

  httplib::Result post(const std::string& path, const std::string& body) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(20, 0);
    return client.Post(path, body, "application/json");
  }

  httplib::Result chat(const std::string& model) {
    return post("/openai/v1/chat/completions", R"({"model":")" + model + R"(","messages":[]})");
  }

  // How many requests each key of the openai pool got, by label.
  std::map<std::string, int> openai_keys_seen() const {
    std::map<std::string, int> count;
    for (const SeenRequest& r : openai.seen()) {
      std::string credential = r.header("Authorization");
      count[credential == "Bearer " + k_wide.secret  ? "wide"
            : credential == "Bearer " + k_any.secret ? "any"
                                                     : "other"]++;
    }
    return count;
  }

  FakeUpstream openai;
  FakeUpstream anthropic;
  FakeUpstream gemini;
  TempDir dir;
  int port = 0;
  std::unique_ptr<ChildProcess> serve;
};

TEST_F(ModelFilterBinary, AKeyNeverGetsAnExcludedModelWhileAnotherKeyServesIt) {
  for (int i = 0; i < 4; ++i) {
    httplib::Result res = chat("gpt-5-codex");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  }
  EXPECT_EQ(openai_keys_seen(), (std::map<std::string, int>{{"any", 4}}));
  // Round-robin goes on spreading the models both keys serve.
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(chat("gpt-4o")->status, 200);
  }
  EXPECT_EQ(openai_keys_seen(), (std::map<std::string, int>{{"any", 6}, {"wide", 2}}));
  ASSERT_TRUE(
      serve->wait_for_stderr("POST /openai/v1/chat/completions 200 pool=openai model=gpt-4o key=wide"))
      << serve->err();
  EXPECT_EQ(serve->err().find("model=gpt-5-codex key=wide"), std::string::npos) << serve->err();
}

TEST_F(ModelFilterBinary, WhenTheKeysServingAModelCoolItIsTheUsual503NotA404) {
  openai.push(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  httplib::Result res = chat("gpt-5");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429) << res->body; // "wide" is not tried: it does not serve gpt-5
  ASSERT_EQ(openai.request_count(), 1u);
  res = chat("gpt-5");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_NE(res->body.find("no_key_available"), std::string::npos) << res->body;
  EXPECT_EQ(res->get_header_value("Retry-After"), "30");
  EXPECT_EQ(openai.request_count(), 1u);
  ASSERT_EQ(chat("gpt-4o")->status, 200); // "wide" still serves the rest
  EXPECT_EQ(openai_keys_seen(), (std::map<std::string, int>{{"any", 1}, {"wide", 1}}));
}

TEST_F(ModelFilterBinary, AModelNoKeyServesIs404InThePoolsErrorShapeWithoutAnUpstreamRequest) {
  httplib::Result res = chat("dall-e-3");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  util::Json openai_error = parsed(res->body);
  const util::Json* error = openai_error.find("error");
  ASSERT_NE(error, nullptr) << res->body;
  EXPECT_EQ(error->string_at("code").value_or(""), "model_not_found");
  EXPECT_NE(error->string_at("message").value_or("").find(
                R"(model "dall-e-3" is not served by any key of pool "openai")"),
            std::string::npos)
      << res->body;

  res = post("/anthropic/v1/messages", R"({"model":"gpt-4o","max_tokens":8,"messages":[]})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  util::Json anthropic_error = parsed(res->body);
  EXPECT_EQ(anthropic_error.string_at("type").value_or(""), "error") << res->body;
  ASSERT_NE(anthropic_error.find("error"), nullptr);
  EXPECT_EQ(anthropic_error.find("error")->string_at("type").value_or(""), "not_found_error");
  EXPECT_NE(res->body.find(R"(pool \"anthropic\")"), std::string::npos) << res->body;

  res = post("/gemini/v1beta/models/gemini-1.5-pro:generateContent", R"({"contents":[]})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  util::Json google_error = parsed(res->body);
  ASSERT_NE(google_error.find("error"), nullptr) << res->body;
  EXPECT_EQ(google_error.find("error")->string_at("status").value_or(""), "NOT_FOUND");
  EXPECT_NE(res->body.find(R"(model \"gemini-1.5-pro\")"), std::string::npos) << res->body;

  EXPECT_EQ(openai.request_count() + anthropic.request_count() + gemini.request_count(), 0u);
  // The served models still reach their keys.
  ASSERT_EQ(post("/gemini/v1beta/models/gemini-2.5-pro:generateContent", R"({"contents":[]})")->status, 200);
  EXPECT_EQ(gemini.request_count(), 1u);
  EXPECT_TRUE(serve->wait_for_stderr("POST /openai/v1/chat/completions 404 pool=openai model=dall-e-3"))
      << serve->err();
}

TEST_F(ModelFilterBinary, ARequestNamingNoModelGoesToAnyKey) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(20, 0);
  ASSERT_EQ(client.Get("/openai/v1/models")->status, 200);
  ASSERT_EQ(post("/openai/v1/embeddings", R"({"input":"hello"})")->status, 200);
  EXPECT_EQ(openai_keys_seen(), (std::map<std::string, int>{{"any", 1}, {"wide", 1}}));
  // Anthropic's pool serves only claude-*, yet a request without a model
  // (token counting for a model keyshim cannot read) still reaches its key.
  ASSERT_EQ(post("/anthropic/v1/messages/count_tokens", R"({"model":7})")->status, 200);
  EXPECT_EQ(anthropic.request_count(), 1u);
}

TEST_F(ModelFilterBinary, StatusShowsWhatARestrictedKeyServes) {
  httplib::Client client("127.0.0.1", port);
  httplib::Result status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find(R"("serves":{"models":null,"exclude_models":["gpt-5*","dall-e*"]})"),
            std::string::npos)
      << status->body;
  EXPECT_NE(status->body.find(R"("serves":{"models":["claude-*"],"exclude_models":[]})"), std::string::npos)
      << status->body;
  EXPECT_NE(status->body.find(R"("label":"any","fingerprint")"), std::string::npos);
}

} // namespace
} // namespace keyshim::test
