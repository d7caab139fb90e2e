// Limits of one's own through the real server: a key at its limit hands the
// next request to another key, and with none left the client gets 503 with a
// Retry-After naming the end of the window. The windows follow the real
// clock: a test that counts in a minute first makes sure it has a few
// seconds of that minute left.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace keyshim::test {
namespace {

using namespace std::chrono;

const std::string k_limits_limited = "sk-own-limits-limited-0001";
const std::string k_free = "sk-own-limits-free-0002";

std::vector<std::string> limits_keys_seen(const FakeUpstream& upstream) {
  std::vector<std::string> keys;
  for (const SeenRequest& r : upstream.seen()) {
    keys.push_back(r.header("Authorization").substr(7));
  }
  return keys;
}

httplib::Result limits_post(const Shim& shim, const std::string& target) {
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  return client.Post(target, R"({"messages":[]})", "application/json");
}

// Three requests take well under a second; one that starts in the last
// seconds of a clock minute waits for the next one (at most 5 s), so the
// minute it counts in cannot end halfway.
void start_early_in_a_minute() {
  const auto now = system_clock::now();
  const auto left = floor<minutes>(now) + 1min - now;
  if (left < 5s) {
    std::this_thread::sleep_for(left + 50ms);
  }
}

// Seconds from now to the end of the current clock minute, rounded up.
long long seconds_to_minute_end() {
  const auto now = system_clock::now();
  return duration_cast<seconds>(ceil<seconds>(floor<minutes>(now) + 1min - now)).count();
}

pool::KeyHealth limits_health(Shim& shim, std::size_t index) {
  return shim.server().state()->pools.at(0).keys->health(index);
}

TEST(OwnLimits, AKeyAtItsRequestsPerMinuteHandsTheNextRequestToTheOtherKey) {
  LogCapture logs;
  FakeUpstream upstream;
  Shim shim("[server]\n" +
                pool_section("lim", upstream.base_url(), "",
                             {{"limited", k_limits_limited, "requests_per_minute = 2\n"}, {"free", k_free}}),
            "");
  start_early_in_a_minute();
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = limits_post(shim, "/lim/v1/chat/completions");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_EQ(limits_keys_seen(upstream),
            (std::vector<std::string>{k_limits_limited, k_limits_limited, k_free}));
  pool::KeyHealth limited = limits_health(shim, 0);
  EXPECT_EQ(limited.state, pool::KeyState::cooling);
  EXPECT_EQ(limited.reason, "own limit: requests 2/2 per minute");
  EXPECT_NE(logs.text().find("key limited at its own limit for "), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find(": requests 2/2 per minute"), std::string::npos) << logs.text();
}

TEST(OwnLimits, WithEveryKeyAtItsLimitTheClientGets503AndRetryAfterNamesTheMinutesEnd) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "requests_per_minute = 2\n"), upstream.base_url());
  start_early_in_a_minute();
  ASSERT_EQ(limits_post(shim, "/v1/chat/completions")->status, 200);
  ASSERT_EQ(limits_post(shim, "/v1/chat/completions")->status, 200);
  httplib::Result refused = limits_post(shim, "/v1/chat/completions");
  const long long expected = seconds_to_minute_end();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  ASSERT_TRUE(refused->has_header("Retry-After"));
  long long retry_after = std::stoll(refused->get_header_value("Retry-After"));
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 60);
  EXPECT_NEAR(static_cast<double>(retry_after), static_cast<double>(expected), 1.0);
  EXPECT_NE(refused->body.find("every key is at one of its own limits"), std::string::npos) << refused->body;
  EXPECT_EQ(upstream.request_count(), 2u); // the third was never sent
}

// The window's end is what a waiter waits for: with max_wait longer than
// the rest of the minute the request waits, nothing sent, instead of the
// 503 (that it is then served is the wait room's tested rule; the real
// clock would make this test wait up to a minute to see it).
TEST(OwnLimits, WithMaxWaitBeyondTheWindowsEndARequestWaitsInsteadOfA503) {
  LogCapture logs;
  FakeUpstream upstream;
  Shim shim(pool_toml(1, "requests_per_minute = 1\nmax_wait = \"2m\"\n"), upstream.base_url());
  start_early_in_a_minute();
  ASSERT_EQ(limits_post(shim, "/v1/chat/completions")->status, 200);
  RawConnection waiting(shim.port());
  waiting.send(make_request("POST", "/v1/chat/completions", R"({"messages":[]})"));
  EXPECT_TRUE(logs.wait_for("POST /v1/chat/completions waits up to 2m")) << logs.text();
  EXPECT_EQ(upstream.request_count(), 1u);
}

// The pool's day begins 12 hours from now (UTC), so no test run crosses it.
std::string day_start_in_twelve_hours() {
  const auto start = floor<minutes>(system_clock::now() + 12h);
  const auto since_midnight = start - floor<days>(start);
  return fmt::format("{:02}:{:02}", duration_cast<hours>(since_midnight).count(),
                     duration_cast<minutes>(since_midnight).count() % 60);
}

TEST(OwnLimits, TokensPerDayCountWhatTheResponseReportedAndTheNextRequestIsRefusedUntilTheNextDay) {
  FakeUpstream upstream;
  upstream.push(json(200, R"({"id":"1","usage":{"prompt_tokens":20,"completion_tokens":15}})"));
  Shim shim(pool_toml(1, "tokens_per_day = 30\nday_zone = \"UTC\"\nday_start = \"" +
                             day_start_in_twelve_hours() + "\"\n"),
            upstream.base_url());
  ASSERT_EQ(limits_post(shim, "/v1/chat/completions")->status, 200);
  // The tokens count when the exchange finishes, just after the client has
  // the whole answer.
  for (int i = 0; i < 200 && limits_health(shim, 0).total.output_tokens == 0; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(limits_health(shim, 0).total.output_tokens, 15u);
  httplib::Result refused = limits_post(shim, "/v1/chat/completions");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  long long retry_after = std::stoll(refused->get_header_value("Retry-After"));
  EXPECT_GT(retry_after, 12 * 3600 - 120);
  EXPECT_LE(retry_after, 12 * 3600 + 60);
  EXPECT_EQ(upstream.request_count(), 1u);
}

} // namespace
} // namespace keyshim::test
