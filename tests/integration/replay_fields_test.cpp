// The fields `keyshim replay` sends to its instance (issue 21 §3,
// docs/behaviour.md §4.2), through the built binary: `keyshim-key` pins the
// one key that serves, without failover; `keyshim-replay` marks the log line
// and counts apart; neither ever reaches the upstream.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

namespace keyshim::test {
namespace {

constexpr const char* k_round_robin = "strategy = \"round-robin\"\n";
constexpr const char* k_body = R"({"model":"m","messages":[]})";

class ReplayFields : public ::testing::Test {
protected:
  void serve(const std::string& toml) {
    std::string text = toml;
    const std::string marker = "@UPSTREAM@";
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.replace(at, marker.size(), upstream.base_url());
    }
    std::string path = m_dir.write("keys.toml", text, 0600);
    m_port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    m_serve.emplace(ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(m_port)}, options));
    ASSERT_TRUE(m_serve->wait_for_stderr("listening on")) << m_serve->err();
  }

  httplib::Result post(const httplib::Headers& headers) {
    httplib::Client client("127.0.0.1", m_port);
    client.set_read_timeout(20, 0);
    return client.Post("/v1/chat/completions", headers, k_body, "application/json");
  }

  // The index of the test key a request carried, or -1.
  static int key_of(const SeenRequest& request) {
    for (int k = 0; k < 4; ++k) {
      if (request.header("Authorization") == "Bearer " + test_key(k)) {
        return k;
      }
    }
    return -1;
  }

  std::optional<util::Json> status(const std::string& token = "") {
    httplib::Client client("127.0.0.1", m_port);
    httplib::Headers headers;
    if (!token.empty()) {
      headers.emplace("Authorization", "Bearer " + token);
    }
    auto res = client.Get("/status", headers);
    return res && res->status == 200 ? util::parse_json(res->body) : std::nullopt;
  }

  // The default pool's key `index` in a /status answer (an empty object when absent).
  static const util::Json& key_status(const util::Json& status, std::size_t index) {
    static const util::Json none = util::Json::make_object();
    const util::Json* pools = status.find("pools");
    if (pools == nullptr || pools->items().empty()) {
      return none;
    }
    const util::Json* keys = pools->items().front().find("keys");
    return keys != nullptr && keys->items().size() > index ? keys->items()[index] : none;
  }

  // key[index][span][field] of a /status answer, -1 when absent.
  static long long usage(const util::Json& status, std::size_t index, const char* span, const char* field) {
    const util::Json* counts = key_status(status, index).find(span);
    const util::Json* value = counts != nullptr ? counts->find(field) : nullptr;
    return value != nullptr && value->is_number() ? static_cast<long long>(value->as_number()) : -1;
  }

  FakeUpstream upstream;
  TempDir m_dir;
  int m_port = 0;
  std::optional<ChildProcess> m_serve;
};

TEST_F(ReplayFields, NeverReachTheUpstreamInAnyCase) {
  serve(pool_toml(2));
  auto res = post({{"KeyShim-Replay", "7"}, {"KEYSHIM-KEY", "k1"}, {"X-Kept", "yes"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen().at(0);
  EXPECT_EQ(seen.header("X-Kept"), "yes");
  for (const auto& [name, value] : seen.headers) {
    EXPECT_EQ(name.rfind("keyshim", 0), std::string::npos) << name << ": " << value;
    EXPECT_EQ(name.rfind("KeyShim", 0), std::string::npos) << name << ": " << value;
    EXPECT_EQ(name.rfind("KEYSHIM", 0), std::string::npos) << name << ": " << value;
  }
}

TEST_F(ReplayFields, APinnedKeyServesEveryRequestUnderRoundRobin) {
  serve(pool_toml(2, k_round_robin));
  for (int i = 0; i < 5; ++i) {
    auto res = post({{"keyshim-key", "k1"}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
  }
  ASSERT_TRUE(post({}));
  ASSERT_TRUE(post({}));
  std::vector<SeenRequest> seen = upstream.seen();
  ASSERT_EQ(seen.size(), 7u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(key_of(seen.at(static_cast<std::size_t>(i))), 1) << "request " << i;
  }
  // The pinned requests left the round-robin cursor alone: k0 comes next.
  EXPECT_EQ(key_of(seen.at(5)), 0);
  EXPECT_EQ(key_of(seen.at(6)), 1);
}

TEST_F(ReplayFields, APinnedKeyAnswering429GivesTheClientThe429WithoutFailover) {
  serve(pool_toml(2, k_round_robin));
  upstream.push(json(429, R"({"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}})",
                     {{"Retry-After", "60"}}));
  auto res = post({{"keyshim-key", "k0"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_NE(res->body.find("Rate limit reached"), std::string::npos) << res->body;
  ASSERT_EQ(upstream.request_count(), 1u);
  EXPECT_EQ(key_of(upstream.seen().at(0)), 0);

  // Its outcome counted as usual: the key cools ...
  std::optional<util::Json> s = status();
  ASSERT_TRUE(s);
  const util::Json* models = key_status(*s, 0).find("models");
  ASSERT_NE(models, nullptr);
  EXPECT_EQ(models->items().size(), 1u) << "the pair (k0, m) cools: " << s->dump();
  // ... a request of no pin avoids it, and one that names it still gets it.
  ASSERT_TRUE(post({}));
  res = post({{"keyshim-key", "k0"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::vector<SeenRequest> seen = upstream.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(key_of(seen.at(1)), 1);
  EXPECT_EQ(key_of(seen.at(2)), 0);
}

TEST_F(ReplayFields, AnUnknownLabelIs400NamingThePoolsLabels) {
  serve(pool_toml(2));
  auto res = post({{"keyshim-key", "nope"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find(R"(no key labelled \"nope\")"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find(R"(\"k0\", \"k1\")"), std::string::npos) << res->body;
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST_F(ReplayFields, AReplayIdThatIsNotAPositiveIntegerIs400) {
  serve(pool_toml(1));
  for (const char* bad : {"abc", "0", "-3", "12x", ""}) {
    auto res = post({{"keyshim-replay", bad}});
    ASSERT_TRUE(res) << bad;
    EXPECT_EQ(res->status, 400) << "\"" << bad << "\": " << res->body;
  }
  EXPECT_EQ(upstream.request_count(), 0u);
}

TEST_F(ReplayFields, AReplayIsMarkedInTheLogAndCountedApart) {
  serve(pool_toml(1));
  const std::string reported = R"({"usage":{"prompt_tokens":11,"completion_tokens":7}})";
  upstream.push(json(200, reported));
  upstream.push(json(200, reported));
  ASSERT_TRUE(post({}));
  auto res = post({{"keyshim-replay", "42"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  ASSERT_TRUE(m_serve->wait_for_stderr("replay=42")) << m_serve->err();

  std::optional<util::Json> s = status();
  ASSERT_TRUE(s);
  EXPECT_EQ(usage(*s, 0, "today", "requests"), 1);
  EXPECT_EQ(usage(*s, 0, "total", "requests"), 1);
  EXPECT_EQ(usage(*s, 0, "total", "input_tokens"), 11);
  EXPECT_EQ(usage(*s, 0, "replays", "requests"), 1);
  EXPECT_EQ(usage(*s, 0, "replays", "input_tokens"), 11);
  EXPECT_EQ(usage(*s, 0, "replays", "output_tokens"), 7);
  const util::Json* ok = key_status(*s, 0).find("ok");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->as_number(), 2) << "a replay's outcome is the key's health all the same";
}

TEST_F(ReplayFields, WithAClientTokenAClientWithoutItIsRefusedAndNothingLeaks) {
  const std::string token = "shim-token-123";
  serve(pool_toml(2, "", "client_token = \"" + token + "\"\n"));
  auto res = post({{"keyshim-key", "k1"}, {"keyshim-replay", "5"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = post({{"keyshim-key", "nope"}, {"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->body.find("k0"), std::string::npos) << "no label is named to a client without the token";
  EXPECT_EQ(upstream.request_count(), 0u);

  res = post({{"keyshim-key", "k1"}, {"keyshim-replay", "5"}, {"Authorization", "Bearer " + token}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen().at(0);
  EXPECT_EQ(key_of(seen), 1);
  EXPECT_FALSE(seen.has_header("keyshim-key"));
  EXPECT_FALSE(seen.has_header("keyshim-replay"));
  EXPECT_EQ(m_serve->err().find(token), std::string::npos);
}

} // namespace
} // namespace keyshim::test
