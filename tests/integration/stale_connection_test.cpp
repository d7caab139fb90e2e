// A pooled upstream connection that fails: the free retry on a fresh
// connection is only for one the upstream had closed while idle (it fails at
// once); one that held the request and then reset is a counted attempt.
// Through the real server, with the attempt counts the upstream, the pool
// and the request log each saw.
#include "relay/upstream_attempt.hpp"
#include "support/http_fake_upstream.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <vector>

namespace keyshim::test {
namespace {

using namespace std::chrono_literals;

Scripted ok() {
  return json(200, R"({"id":"chatcmpl-1"})");
}

// Silent for `hold`, then a RST instead of any response.
Scripted reset_after(std::chrono::milliseconds hold) {
  Scripted s;
  s.head_delay = hold;
  s.reset_before_reply = true;
  return s;
}

std::vector<std::string> keys_seen(const FakeUpstream& upstream) {
  std::vector<std::string> keys;
  for (const SeenRequest& r : upstream.seen()) {
    keys.push_back(r.header("Authorization").substr(7));
  }
  return keys;
}

std::uint64_t attempts_of(Shim& shim, std::size_t key) {
  return shim.server().state()->pools.at(0).keys->health(key).total.requests;
}

// The first request of each test goes to another path, so the request log
// tells the two apart.
httplib::Result post(httplib::Client& client, const std::string& path = "/v1/chat/completions") {
  return client.Post(path, R"({"messages":[]})", "application/json");
}

TEST(StaleConnection, APooledConnectionClosedAtOnceIsRetriedFreeOnAFreshOne) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(ok());
  upstream.push(reset_after(0ms)); // the reused connection: RST as soon as the request arrives
  upstream.push(ok());
  Shim shim(pool_toml(2), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  ASSERT_EQ(post(client, "/v1/first")->status, 200); // leaves its upstream connection in the pool
  httplib::Result res = post(client);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // Same key on a fresh connection, and not an attempt: the key was not at fault.
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(0), test_key(0)}));
  EXPECT_EQ(upstream.connections(), 2u);
  EXPECT_EQ(attempts_of(shim, 0), 2u);
  EXPECT_TRUE(logs.contains("key k0: pooled connection was closed")) << logs.text();
  EXPECT_TRUE(logs.wait_for("/v1/chat/completions 200 pool=default key=k0 attempts=1 chain=k0:200 "))
      << logs.text();
}

// The issue: held 15 s then reset, then resent without counting (4 attempts
// in 60 s, the log said 3). Here the hold is just past the stale window.
TEST(StaleConnection, APooledConnectionThatHeldTheRequestThenResetIsACountedAttempt) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(ok());
  upstream.push(reset_after(relay::k_stale_window + 200ms));
  upstream.push(ok());
  Shim shim(pool_toml(2), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  ASSERT_EQ(post(client, "/v1/first")->status, 200);
  httplib::Result res = post(client);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // A reset is the key's failure: the same key once more (fresh), counted.
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(0), test_key(0)}));
  EXPECT_EQ(attempts_of(shim, 0), 3u);
  EXPECT_FALSE(logs.contains("pooled connection was closed")) << logs.text();
  EXPECT_TRUE(logs.wait_for("/v1/chat/completions 200 pool=default key=k0 attempts=2 chain=k0:reset,k0:200"))
      << logs.text();
}

// With every later attempt failing too: exactly max_attempts requests after
// the first reach the upstream, and the log counts each of them.
TEST(StaleConnection, AHeldPooledConnectionCountsTowardMaxAttempts) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(ok());
  upstream.push(reset_after(relay::k_stale_window + 200ms));
  upstream.push(reset_after(0ms)); // fresh connections: counted however fast they fail
  upstream.push(reset_after(0ms));
  Shim shim(pool_toml(1, "max_attempts = 2\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  ASSERT_EQ(post(client, "/v1/first")->status, 200);
  httplib::Result res = post(client);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 502);
  EXPECT_EQ(upstream.request_count(), 3u); // the first request, then max_attempts
  EXPECT_EQ(attempts_of(shim, 0), 3u);
  EXPECT_TRUE(logs.wait_for("/v1/chat/completions 502 pool=default")) << logs.text();
  EXPECT_TRUE(logs.contains(" attempts=2 chain=k0:reset,k0:reset ")) << logs.text();
}

} // namespace
} // namespace keyshim::test
