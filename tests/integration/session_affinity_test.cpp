// Sessions stay on one key (issue 20 §2, docs/behaviour.md §4), through the
// built binary: `keyshim serve` against a fake upstream that records which
// key each request carried.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace keyshim::test {
namespace {

constexpr const char* k_affinity_round_robin = "strategy = \"round-robin\"\n";
constexpr const char* k_claude_header = "X-Claude-Code-Session-Id";

class SessionAffinity : public ::testing::Test {
protected:
  void serve(const std::string& toml) {
    m_path = write_pool(toml);
    m_port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    m_serve.emplace(ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", m_path, "--listen", "127.0.0.1:" + std::to_string(m_port)}, options));
    ASSERT_TRUE(m_serve->wait_for_stderr("listening on")) << m_serve->err();
  }

  std::string write_pool(const std::string& toml) {
    std::string text = toml;
    const std::string marker = "@UPSTREAM@";
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.replace(at, marker.size(), upstream.base_url());
    }
    return m_dir.write("keys.toml", text, 0600);
  }

  // One request on a connection of its own, with `headers`; its status.
  int post(const httplib::Headers& headers, const std::string& body = R"({"model":"m","messages":[]})") {
    httplib::Client client("127.0.0.1", m_port);
    client.set_read_timeout(20, 0);
    auto res = client.Post("/v1/chat/completions", headers, body, "application/json");
    return res ? res->status : 0;
  }

  // The key (index into test_key) of the upstream's request `i`, or -1.
  int key_of(const SeenRequest& request) const {
    for (int k = 0; k < 8; ++k) {
      if (request.header("Authorization") == "Bearer " + test_key(k)) {
        return k;
      }
    }
    return -1;
  }

  // The keys the upstream saw for each value of `header`, in order.
  std::map<std::string, std::vector<int>> keys_by(const std::string& header) const {
    std::map<std::string, std::vector<int>> out;
    for (const SeenRequest& request : upstream.seen()) {
      out[request.header(header)].push_back(key_of(request));
    }
    return out;
  }

  std::optional<util::Json> status() {
    httplib::Client client("127.0.0.1", m_port);
    auto res = client.Get("/status");
    return res && res->status == 200 ? util::parse_json(res->body) : std::nullopt;
  }

  FakeUpstream upstream;
  TempDir m_dir;
  std::string m_path;
  int m_port = 0;
  std::optional<ChildProcess> m_serve;
};

std::set<int> distinct(const std::vector<int>& keys) {
  return {keys.begin(), keys.end()};
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// Read until `connection` has received `n` whole answers (each ends in the
// fake upstream's default body), or 10 s pass.
bool read_answers(RawConnection& connection, std::size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (occurrences(connection.received(), "{\"ok\":true}") < n) {
    if (std::chrono::steady_clock::now() > deadline || !connection.read_more(std::chrono::seconds(10))) {
      return false;
    }
  }
  return true;
}

TEST_F(SessionAffinity, TwoInterleavedClaudeCodeSessionsUnderRoundRobinUseOneKeyEach) {
  serve(pool_toml(3, k_affinity_round_robin));
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200);
    ASSERT_EQ(post({{k_claude_header, "session-b"}}), 200);
  }
  auto keys = keys_by(k_claude_header);
  ASSERT_EQ(keys["session-a"].size(), 10u);
  ASSERT_EQ(keys["session-b"].size(), 10u);
  EXPECT_EQ(distinct(keys["session-a"]).size(), 1u);
  EXPECT_EQ(distinct(keys["session-b"]).size(), 1u);
  EXPECT_NE(keys["session-a"][0], keys["session-b"][0]);
  EXPECT_EQ(distinct(keys["session-a"]).count(-1), 0u);
}

TEST_F(SessionAffinity, AfterItsKeyAnswers429ASessionMovesOnceAndStays) {
  serve(pool_toml(3, k_affinity_round_robin));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200);
    ASSERT_EQ(post({{k_claude_header, "session-b"}}), 200);
  }
  upstream.push(json(429, R"({"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}})",
                     {{"Retry-After", "60"}}));
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200); // the first one after a failover
    ASSERT_EQ(post({{k_claude_header, "session-b"}}), 200);
  }
  auto keys = keys_by(k_claude_header);
  const std::vector<int>& a = keys["session-a"];
  ASSERT_EQ(a.size(), 14u); // 3 before, the 429 and its failover, 9 more
  const int first = a[0];
  const int moved = a[4];
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + 4), std::vector<int>(4, first)); // the 429 came from it
  EXPECT_NE(moved, first);
  EXPECT_EQ(std::vector<int>(a.begin() + 4, a.end()), std::vector<int>(10, moved)); // once, and for good
  EXPECT_EQ(distinct(keys["session-b"]).size(), 1u);
}

TEST_F(SessionAffinity, CodexSessionIdHeaderKeepsItsKey) {
  serve(pool_toml(3, k_affinity_round_robin));
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(post({{"session-id", "0199c-codex-1"}}), 200);
    ASSERT_EQ(post({{"session_id", "0198-codex-2"}}), 200);
  }
  std::map<std::string, std::vector<int>> keys;
  for (const SeenRequest& request : upstream.seen()) {
    std::string id =
        request.has_header("session-id") ? request.header("session-id") : request.header("session_id");
    keys[id].push_back(key_of(request));
  }
  EXPECT_EQ(distinct(keys["0199c-codex-1"]).size(), 1u);
  EXPECT_EQ(distinct(keys["0198-codex-2"]).size(), 1u);
  EXPECT_NE(keys["0199c-codex-1"][0], keys["0198-codex-2"][0]);
}

TEST_F(SessionAffinity, ABodysPromptCacheKeyKeepsItsKey) {
  serve(pool_toml(3, k_affinity_round_robin));
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(post({}, R"({"model":"m","input":"hi","prompt_cache_key":"cache-1"})"), 200);
    ASSERT_EQ(post({}, R"({"model":"m","input":"hi","prompt_cache_key":"cache-2"})"), 200);
  }
  std::vector<int> one;
  std::vector<int> two;
  for (const SeenRequest& request : upstream.seen()) {
    (request.body.find("cache-1") != std::string::npos ? one : two).push_back(key_of(request));
  }
  EXPECT_EQ(one, std::vector<int>(6, one.at(0)));
  EXPECT_EQ(two, std::vector<int>(6, two.at(0)));
  EXPECT_NE(one.at(0), two.at(0));
}

TEST_F(SessionAffinity, AKeptAliveConnectionWithoutASessionIdStaysOnOneKey) {
  serve(pool_toml(3, k_affinity_round_robin));
  RawConnection first(m_port);
  RawConnection second(m_port);
  const std::string request = make_request("POST", "/v1/chat/completions", R"({"messages":[]})");
  for (std::size_t i = 1; i <= 5; ++i) {
    for (RawConnection* connection : {&first, &second}) {
      ASSERT_TRUE(connection->send(request));
      ASSERT_TRUE(read_answers(*connection, i)) << connection->received();
    }
  }
  EXPECT_EQ(occurrences(first.received(), "HTTP/1.1 200 "), 5u);
  EXPECT_EQ(occurrences(second.received(), "HTTP/1.1 200 "), 5u);
  std::vector<int> keys;
  for (const SeenRequest& seen : upstream.seen()) {
    keys.push_back(key_of(seen));
  }
  ASSERT_EQ(keys.size(), 10u);
  for (std::size_t i = 2; i < keys.size(); ++i) {
    EXPECT_EQ(keys[i], keys[i % 2]) << "request " << i;
  }
  EXPECT_NE(keys[0], keys[1]);
}

TEST_F(SessionAffinity, RequestsOfNoSessionOnFreshConnectionsStillRoundRobin) {
  serve(pool_toml(3, k_affinity_round_robin));
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(post({}), 200);
  }
  std::vector<int> keys;
  for (const SeenRequest& seen : upstream.seen()) {
    keys.push_back(key_of(seen));
  }
  EXPECT_EQ(keys, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST_F(SessionAffinity, AZeroSessionTtlTurnsAffinityOff) {
  serve(pool_toml(3, std::string(k_affinity_round_robin) + "session_ttl = \"0s\"\n"));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200);
  }
  EXPECT_EQ(keys_by(k_claude_header)["session-a"], (std::vector<int>{0, 1, 2}));
}

TEST_F(SessionAffinity, StatusCountsSessionsPerKeyAndAReloadKeepsThem) {
  serve(pool_toml(3, k_affinity_round_robin));
  ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200); // key 0
  ASSERT_EQ(post({{k_claude_header, "session-b"}}), 200); // key 1
  std::optional<util::Json> before = status();
  ASSERT_TRUE(before);
  std::vector<std::uint64_t> sessions;
  for (const util::Json& key : before->find("pools")->items().at(0).find("keys")->items()) {
    sessions.push_back(key.find("sessions")->as_unsigned().value_or(99));
  }
  EXPECT_EQ(sessions, (std::vector<std::uint64_t>{1, 1, 0}));

  write_pool(pool_toml(4, k_affinity_round_robin)); // the same three keys and a new one
  m_serve->send_signal(SIGHUP);
  ASSERT_TRUE(m_serve->wait_for_stderr("reloaded")) << m_serve->err();
  // A fresh cursor would give session-b key 0 and session-a key 1.
  ASSERT_EQ(post({{k_claude_header, "session-b"}}), 200);
  ASSERT_EQ(post({{k_claude_header, "session-a"}}), 200);
  auto seen = keys_by(k_claude_header);
  EXPECT_EQ(seen["session-a"], (std::vector<int>{0, 0}));
  EXPECT_EQ(seen["session-b"], (std::vector<int>{1, 1}));
}

} // namespace
} // namespace keyshim::test
