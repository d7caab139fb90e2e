// A model name keyshim cannot show as it is (too long, non-ASCII, control
// bytes) is still a model of its own: a 429 for it cools that name on the
// key, not the key for every model, and logs, /status and /metrics show its
// bounded, printable identity, never the raw name.
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

namespace keyshim::test {
namespace {

httplib::Result post(const Shim& shim, const std::string& model) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(10, 0);
  return client.Post("/v1/chat/completions", R"({"model":")" + model + R"(","messages":[]})",
                     "application/json");
}

std::string get(const Shim& shim, const std::string& path) {
  httplib::Client client("127.0.0.1", shim.port());
  httplib::Result res = client.Get(path);
  return res ? res->body : "";
}

TEST(ModelIdentity, A429ForAnUnusableModelNameCoolsOnlyThatName) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(
      json(429, R"({"error":{"message":"Rate limit reached","type":"requests"}})", {{"Retry-After", "60"}}));
  Shim shim(pool_toml(1), upstream.base_url());
  const std::string weird = std::string(201, 'x') + "\xC3\xA9\\u001b[31m";

  ASSERT_TRUE(post(shim, weird));
  ASSERT_EQ(upstream.request_count(), 1u);

  // The key still serves every other model...
  httplib::Result other = post(shim, "gpt-4o");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  EXPECT_EQ(upstream.request_count(), 2u);

  // ...but not the weird one, which is cooling on it.
  httplib::Result again = post(shim, weird);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 503);
  EXPECT_EQ(upstream.request_count(), 2u);

  pool::KeyHealth h = shim.server().state()->pools.at(0).keys->health(0);
  EXPECT_EQ(h.state, pool::KeyState::available);
  ASSERT_EQ(h.models.size(), 1u);
  const std::string& id = h.models[0].model;
  EXPECT_EQ(id.substr(0, 49), std::string(48, 'x') + "#");
  EXPECT_EQ(id.size(), 49u + 16u);

  EXPECT_TRUE(logs.wait_for("model=" + id + " ")) << logs.text();
  EXPECT_NE(get(shim, "/status").find("\"model\":\"" + id + "\""), std::string::npos);
  EXPECT_NE(get(shim, "/metrics").find("model=\"" + id + "\""), std::string::npos);
  for (const std::string& text : {logs.text(), get(shim, "/status"), get(shim, "/metrics")}) {
    EXPECT_EQ(text.find(std::string(49, 'x')), std::string::npos);
    EXPECT_EQ(text.find("\xC3\xA9"), std::string::npos);
  }
}

} // namespace
} // namespace keyshim::test
