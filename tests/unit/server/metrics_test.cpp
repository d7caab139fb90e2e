// The text of GET /metrics: exact lines for the families a dashboard reads,
// the format's grouping and escaping rules, and no key material.
#include "server/metrics.hpp"

#include "keyshim/version.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

const util::TimePoint k_now = std::chrono::system_clock::from_time_t(1'800'000'000);

pool::KeySnapshot key(std::string label, pool::KeyState state) {
  pool::KeySnapshot snapshot;
  snapshot.label = std::move(label);
  snapshot.fingerprint = "sk-...Wq9z";
  snapshot.upstream = "https://api.openai.com/v1";
  snapshot.health.state = state;
  return snapshot;
}

pool::ModelHealth model(std::string name, bool cooled, util::TimePoint until) {
  pool::ModelHealth m;
  m.model = std::move(name);
  m.cooled = cooled;
  m.until = until;
  return m;
}

// Pool "openai": "team" cooling 20 s after 429s with traffic behind it and
// two models in trouble, "personal" idle. Pool "anthropic": "old" disabled.
std::vector<PoolReport> reports() {
  pool::KeySnapshot team = key("team", pool::KeyState::cooling);
  team.health.until = k_now + 20s;
  team.health.in_flight = 1;
  team.health.ok_count = 2;
  team.health.total.requests = 5;
  team.health.total.failures = {2, 0, 0, 1, 0};
  team.health.total.input_tokens = 1200;
  team.health.total.output_tokens = 310;
  team.health.total.bytes = 10432;
  team.health.today.requests = 1; // since midnight: counters report the total
  team.sessions = 3;
  team.health.models = {model("gpt-4o", true, k_now + 7500ms), model("o1", true, k_now - 1s),
                        model("gpt-4o-mini", false, {})};
  pool::KeyQuota quota;
  quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::requests)) = {500, 0, k_now + 2500ms};
  quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::tokens)) = {30000, 1200, std::nullopt};
  team.health.quota = quota;
  PoolReport openai{"openai",
                    "/openai",
                    "https://api.openai.com/v1",
                    {team, key("personal", pool::KeyState::available)},
                    {2, 1, 1, 0}};
  PoolReport anthropic{"anthropic",
                       "/anthropic",
                       "https://api.anthropic.com",
                       {key("old", pool::KeyState::disabled)},
                       {1, 0, 0, 1}};
  return {openai, anthropic};
}

InstanceInfo info() {
  return InstanceInfo{4242, 3, "/home/u/.config/keyshim/keys.toml", "", "127.0.0.1:8787"};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

// `expected`, in order and adjacent, somewhere in `text`.
::testing::AssertionResult has_lines(const std::string& text, const std::vector<std::string>& expected) {
  std::string block;
  for (const std::string& line : expected) {
    block += line + "\n";
  }
  if (("\n" + text).find("\n" + block) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "missing:\n" << block << "in:\n" << text;
}

TEST(Metrics, InstanceAndPoolFamiliesHaveExactLines) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_TRUE(has_lines(text, {"# HELP keyshim_info The running keyshim's version; always 1.",
                               "# TYPE keyshim_info gauge",
                               fmt::format("keyshim_info{{version=\"{}\"}} 1", k_version)}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_config_generation gauge", "keyshim_config_generation 3"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_config_usable gauge", "keyshim_config_usable 1"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_pool_keys gauge",
                               R"(keyshim_pool_keys{pool="openai",state="available"} 1)",
                               R"(keyshim_pool_keys{pool="openai",state="cooling"} 1)",
                               R"(keyshim_pool_keys{pool="openai",state="disabled"} 0)",
                               R"(keyshim_pool_keys{pool="anthropic",state="available"} 0)",
                               R"(keyshim_pool_keys{pool="anthropic",state="cooling"} 0)",
                               R"(keyshim_pool_keys{pool="anthropic",state="disabled"} 1)"}));
}

TEST(Metrics, KeyGaugesShowStateCooldownAndInFlight) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_up gauge", R"(keyshim_key_up{pool="openai",key="team"} 0)",
                               R"(keyshim_key_up{pool="openai",key="personal"} 1)",
                               R"(keyshim_key_up{pool="anthropic",key="old"} 0)"}));
  EXPECT_TRUE(has_lines(text, {R"(keyshim_key_state{pool="openai",key="team",state="available"} 0)",
                               R"(keyshim_key_state{pool="openai",key="team",state="cooling"} 1)",
                               R"(keyshim_key_state{pool="openai",key="team",state="disabled"} 0)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_cooldown_seconds gauge",
                               R"(keyshim_key_cooldown_seconds{pool="openai",key="team"} 20)",
                               R"(keyshim_key_cooldown_seconds{pool="openai",key="personal"} 0)",
                               R"(keyshim_key_cooldown_seconds{pool="anthropic",key="old"} 0)"}));
  EXPECT_TRUE(has_lines(text, {R"(keyshim_key_in_flight{pool="openai",key="team"} 1)",
                               R"(keyshim_key_in_flight{pool="openai",key="personal"} 0)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_sessions gauge",
                               R"(keyshim_key_sessions{pool="openai",key="team"} 3)",
                               R"(keyshim_key_sessions{pool="openai",key="personal"} 0)"}));
}

TEST(Metrics, ModelCooldownsListOnlyModelsInTrouble) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_model_cooldown_seconds gauge",
                       R"(keyshim_model_cooldown_seconds{pool="openai",key="team",model="gpt-4o"} 7.5)",
                       R"(keyshim_model_cooldown_seconds{pool="openai",key="team",model="o1"} 0)"}));
  EXPECT_EQ(text.find("gpt-4o-mini"), std::string::npos) << "a failure below the streak is not trouble yet";
}

TEST(Metrics, QuotaGaugesShowOnlyTheFiguresReported) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_quota_limit gauge",
                               R"(keyshim_key_quota_limit{pool="openai",key="team",kind="requests"} 500)",
                               R"(keyshim_key_quota_limit{pool="openai",key="team",kind="tokens"} 30000)"}));
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_quota_remaining gauge",
                       R"(keyshim_key_quota_remaining{pool="openai",key="team",kind="requests"} 0)",
                       R"(keyshim_key_quota_remaining{pool="openai",key="team",kind="tokens"} 1200)"}));
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_quota_reset_seconds gauge",
                       R"(keyshim_key_quota_reset_seconds{pool="openai",key="team",kind="requests"} 2.5)",
                       "# HELP keyshim_key_attempts_total Attempts made with the key."}))
      << "no reset sample for a kind reported without one";
  EXPECT_EQ(text.find(R"(key="personal",kind=)"), std::string::npos) << "a key without figures has no sample";
}

TEST(Metrics, EachOwnLimitShowsTheLimitItsUseAndWhenItResets) {
  std::vector<PoolReport> pools = reports();
  pools[0].keys[1].limits = {{"requests_per_minute", "requests", "minute", 2, 2, k_now + 34s},
                             {"tokens_per_day", "tokens", "day", 1200, 2'000'000, k_now + 10h}};
  std::string text = metrics_text(pools, k_now, info());
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_limit gauge",
                       R"(keyshim_key_limit{pool="openai",key="personal",limit="requests_per_minute"} 2)",
                       R"(keyshim_key_limit{pool="openai",key="personal",limit="tokens_per_day"} 2000000)"}));
  EXPECT_TRUE(has_lines(
      text, {"# TYPE keyshim_key_limit_used gauge",
             R"(keyshim_key_limit_used{pool="openai",key="personal",limit="requests_per_minute"} 2)",
             R"(keyshim_key_limit_used{pool="openai",key="personal",limit="tokens_per_day"} 1200)"}));
  EXPECT_TRUE(has_lines(
      text,
      {"# TYPE keyshim_key_limit_reset_seconds gauge",
       R"(keyshim_key_limit_reset_seconds{pool="openai",key="personal",limit="requests_per_minute"} 34)",
       R"(keyshim_key_limit_reset_seconds{pool="openai",key="personal",limit="tokens_per_day"} 36000)"}));
  EXPECT_EQ(metrics_text(reports(), k_now, info()).find("keyshim_key_limit"), std::string::npos)
      << "no family without a limit";
}

TEST(Metrics, CountersAreSinceStartWithEveryFailureClass) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_attempts_total counter",
                               R"(keyshim_key_attempts_total{pool="openai",key="team"} 5)"}));
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_failures_total counter",
                       R"(keyshim_key_failures_total{pool="openai",key="team",class="rate_limit"} 2)",
                       R"(keyshim_key_failures_total{pool="openai",key="team",class="auth"} 0)",
                       R"(keyshim_key_failures_total{pool="openai",key="team",class="quota"} 0)",
                       R"(keyshim_key_failures_total{pool="openai",key="team",class="server"} 1)",
                       R"(keyshim_key_failures_total{pool="openai",key="team",class="transport"} 0)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_responses_ok_total counter",
                               R"(keyshim_key_responses_ok_total{pool="openai",key="team"} 2)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_input_tokens_total counter",
                               R"(keyshim_key_input_tokens_total{pool="openai",key="team"} 1200)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_output_tokens_total counter",
                               R"(keyshim_key_output_tokens_total{pool="openai",key="team"} 310)"}));
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_key_response_bytes_total counter",
                               R"(keyshim_key_response_bytes_total{pool="openai",key="team"} 10432)",
                               R"(keyshim_key_response_bytes_total{pool="openai",key="personal"} 0)"}));
}

// A counter past 2^53 is printed digit for digit: as a double it would be
// rounded, and a scraper would see it move when it did not.
TEST(Metrics, CountersAboveTwoToThe53AreExactIntegers) {
  std::vector<PoolReport> pools = reports();
  pools[0].keys[0].health.total.input_tokens = std::numeric_limits<std::uint64_t>::max();
  pools[0].keys[0].health.total.output_tokens = 9007199254740993; // 2^53 + 1
  std::string text = metrics_text(pools, k_now, info());
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_input_tokens_total counter",
                       R"(keyshim_key_input_tokens_total{pool="openai",key="team"} 18446744073709551615)"}));
  EXPECT_TRUE(
      has_lines(text, {"# TYPE keyshim_key_output_tokens_total counter",
                       R"(keyshim_key_output_tokens_total{pool="openai",key="team"} 9007199254740993)"}));
}

// The format wants one # HELP and one # TYPE per family, before its samples,
// and all of a family's samples together.
TEST(Metrics, EveryFamilyIsDeclaredOnceBeforeItsSamples) {
  std::string text = metrics_text(reports(), k_now, info());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::set<std::string> declared;
  std::string current;
  bool helped = false;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("# HELP ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(declared.insert(current).second) << "declared twice: " << current;
      helped = true;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(helped) << line;
      EXPECT_EQ(line.substr(7, current.size() + 1), current + " ") << line;
      helped = false;
    } else {
      EXPECT_EQ(line.substr(0, line.find_first_of("{ ")), current) << line;
    }
  }
  EXPECT_EQ(declared.size(), 20u);
}

TEST(Metrics, HostileLabelsAndModelNamesAreEscaped) {
  std::vector<PoolReport> pools = reports();
  pools[0].keys[0].label = "te\"am\\x\nkeyshim_key_up 1";
  pools[0].keys[0].health.models = {model(R"(gpt"} 1)"
                                          "\\",
                                          true, k_now + 1s)};
  std::string text = metrics_text(pools, k_now, info());
  EXPECT_TRUE(has_lines(text, {R"(keyshim_key_up{pool="openai",key="te\"am\\x\nkeyshim_key_up 1"} 0)"}));
  EXPECT_TRUE(has_lines(
      text,
      {R"(keyshim_model_cooldown_seconds{pool="openai",key="te\"am\\x\nkeyshim_key_up 1",model="gpt\"} 1\\"} 1)"}));
  for (const std::string& line : lines_of(text)) {
    EXPECT_NE(line, "keyshim_key_up 1") << "a label's newline began a sample of its own";
  }
  EXPECT_EQ(escape_label_value("plain"), "plain");
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), R"(a\\b\"c\nd)");
}

TEST(Metrics, KeysAppearOnlyAsTheirLabel) {
  std::string text = metrics_text(reports(), k_now, info());
  EXPECT_EQ(text.find("Wq9z"), std::string::npos) << "not even the fingerprint";
  EXPECT_EQ(text.find("api.openai.com"), std::string::npos);
  EXPECT_EQ(text.find("4242"), std::string::npos) << "nor the pid";
  EXPECT_EQ(text.find("keys.toml"), std::string::npos) << "nor the pool file's path";
}

TEST(Metrics, UnusablePoolFileHasNoKeyFamilies) {
  InstanceInfo broken = info();
  broken.problem = "keys.toml:3:1: unknown key \"kyes\"";
  std::string text = metrics_text({}, k_now, broken);
  EXPECT_TRUE(has_lines(text, {"# TYPE keyshim_config_usable gauge", "keyshim_config_usable 0"}));
  EXPECT_EQ(text.find("keyshim_key_"), std::string::npos);
  EXPECT_EQ(text.find("keyshim_pool_keys"), std::string::npos);
}

// Prometheus' own parser, when the machine has it (Debian: prometheus).
TEST(Metrics, PromtoolAcceptsTheText) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is not installed";
  }
  std::vector<PoolReport> pools = reports();
  pools[0].keys[1].label = "per\"so\\nal\n";
  test::TempDir dir;
  std::string path = dir.write("metrics.txt", metrics_text(pools, k_now, info()));
  EXPECT_EQ(std::system(("promtool check metrics < '" + path + "'").c_str()), 0);
}

} // namespace
} // namespace keyshim::server
