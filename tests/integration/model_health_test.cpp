// One model failing on every key while another keeps answering through the
// same keys: through the real `keyshim serve`, as the issue reproduced it.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

namespace keyshim::test {
namespace {

std::string chat(const std::string& model) {
  return R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}]})";
}

Scripted outage() {
  return Scripted{
      503, {{"Content-Type", "application/json"}}, {R"({"error":{"message":"model s04 is down"}})"}};
}

class ModelHealthBinary : public ::testing::Test {
protected:
  void SetUp() override {
    std::string text = pool_toml(2);
    const std::string marker = "@UPSTREAM@";
    text.replace(text.find(marker), marker.size(), upstream.base_url());
    std::string path = dir.write("keys.toml", text, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    serve = std::make_unique<ChildProcess>(ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options));
    ASSERT_TRUE(serve->wait_for_stderr("listening on")) << serve->err();
  }

  httplib::Result post(const std::string& model) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(20, 0);
    return client.Post("/v1/chat/completions", chat(model), "application/json");
  }

  FakeUpstream upstream;
  TempDir dir;
  int port = 0;
  std::unique_ptr<ChildProcess> serve;
};

TEST_F(ModelHealthBinary, AModelFailingOnEveryKeyDoesNotStopTheOthers) {
  ASSERT_EQ(post("ok")->status, 200);
  // Two requests for s04: a, a, b, b (a streak of 2 on each key), then a and
  // b once more: the third failure in a row cools s04 on each key.
  for (int i = 0; i < 6; ++i) {
    upstream.push(outage());
  }
  EXPECT_EQ(post("s04")->status, 503);
  EXPECT_EQ(post("s04")->status, 503);
  ASSERT_TRUE(serve->wait_for_stderr("cooling 30s for model s04: 3 consecutive failures")) << serve->err();

  std::size_t before = upstream.request_count();
  EXPECT_EQ(before, 7u);
  httplib::Result ok = post("ok");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body; // the same keys still serve a healthy model
  EXPECT_EQ(upstream.request_count(), before + 1);

  httplib::Result again = post("s04"); // cooling on both keys: keyshim's own 503, for s04 only
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 503);
  EXPECT_NE(again->body.find("no_key_available"), std::string::npos) << again->body;
  EXPECT_EQ(again->get_header_value("Retry-After"), "30");
  EXPECT_EQ(upstream.request_count(), before + 1);

  httplib::Client client("127.0.0.1", port);
  httplib::Result health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  httplib::Result status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find(R"("models":[{"model":"s04","state":"cooling")"), std::string::npos)
      << status->body;
  EXPECT_NE(status->body.find(R"("state":"available")"), std::string::npos) << status->body;
  EXPECT_TRUE(serve->wait_for_stderr("POST /v1/chat/completions 200 pool=default model=ok key=k0"))
      << serve->err();
}

} // namespace
} // namespace keyshim::test
