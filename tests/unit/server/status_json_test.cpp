// The bodies of GET /status and GET /health, byte for byte: `keyshim status`,
// `keyshim reload`, the demo and people's scripts read this shape.
#include "server/status_json.hpp"

#include "keyshim/version.hpp"
#include "util/json.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

const util::TimePoint k_status_now = std::chrono::system_clock::from_time_t(1'800'000'000);

pool::KeySnapshot status_key(std::string label, pool::KeyState state) {
  pool::KeySnapshot snapshot;
  snapshot.label = std::move(label);
  snapshot.fingerprint = "sk-...Wq9z";
  snapshot.upstream = "https://api.openai.com/v1";
  snapshot.health.state = state;
  return snapshot;
}

// "team" cooling 20 s with one model cooling and one waiting for its probe,
// serving only some models; "old" disabled with a reason that needs escaping.
std::vector<PoolReport> status_reports() {
  pool::KeySnapshot team = status_key("team", pool::KeyState::cooling);
  team.health.until = k_status_now + 20s;
  team.health.reason = "429 Retry-After";
  team.health.ok_count = 2;
  team.health.error_count = 3;
  team.health.last_status = 429;
  team.health.in_flight = 1;
  team.health.total.requests = 5;
  team.health.total.failures = {2, 0, 0, 1, 0};
  team.health.total.input_tokens = 1200;
  team.health.total.output_tokens = 310;
  team.health.today.requests = 1;
  team.sessions = 2;
  team.health.last_error = pool::LastError{429, "429 Retry-After", k_status_now - 12s};
  team.max_concurrent = 4;
  pool::ModelHealth cooling;
  cooling.model = "gpt-4o";
  cooling.cooled = true;
  cooling.until = k_status_now + 7500ms;
  cooling.reason = "429";
  pool::ModelHealth probing = cooling;
  probing.model = "o1";
  probing.until = k_status_now - 1s;
  probing.probing = true;
  pool::ModelHealth calm;
  calm.model = "gpt-4o-mini";
  team.health.models = {cooling, probing, calm};
  team.models = config::ModelFilter{std::vector<std::string>{"gpt-4o*", "o1"}, {"gpt-4o-audio*"}};
  pool::KeySnapshot old = status_key("old", pool::KeyState::disabled);
  old.health.reason = "401 \"invalid\\key\"\n";
  return {PoolReport{"default", "/", "https://api.openai.com/v1", {team, old}, {2, 0, 1, 1}, 3, 4200ms}};
}

TEST(StatusJson, StatusHasThePinnedShape) {
  InstanceInfo info{4242, 3, "/home/u/keys.toml", "", "127.0.0.1:8787", 7, 200, 9000};
  std::string usage_zero =
      R"({"requests":0,"failures":{"rate_limit":0,"auth":0,"quota":0,"server":0,"transport":0},)"
      R"("input_tokens":0,"output_tokens":0})";
  std::string expected = fmt::format(
      R"({{"version":"{}","pid":4242,"generation":3,"listen":"127.0.0.1:8787","config":"/home/u/keys.toml",)"
      R"("problem":null,"totals":{{"total":2,"available":0,"cooling":1,"disabled":1}},"pools":[{{"name":"default",)"
      R"("route":"/","upstream":"https://api.openai.com/v1","totals":{{"total":2,"available":0,"cooling":1,)"
      R"("disabled":1}},"waiting":3,"oldest_wait_ms":4200,"keys":[{{"label":"team","fingerprint":"sk-...Wq9z",)"
      R"("upstream":"https://api.openai.com/v1","serves":{{"models":["gpt-4o*","o1"],)"
      R"("exclude_models":["gpt-4o-audio*"]}},"state":"cooling","until":"2027-01-15T08:00:20Z","resumes_in_ms":20000,)"
      R"("reason":"429 Retry-After","ok":2,"err":3,"last_status":429,"last_error":{{"status":429,)"
      R"("reason":"429 Retry-After","at":"2027-01-15T07:59:48Z","ago_ms":12000}},"in_flight":1,"max_concurrent":4,)"
      R"("websockets":0,"sessions":2,"today":{{"requests":1,"failures":{{"rate_limit":0,)"
      R"("auth":0,"quota":0,"server":0,"transport":0}},"input_tokens":0,"output_tokens":0}},)"
      R"("total":{{"requests":5,"failures":{{"rate_limit":2,"auth":0,"quota":0,"server":1,)"
      R"("transport":0}},"input_tokens":1200,"output_tokens":310}},"replays":{},)"
      R"("limits":[],"models":[{{"model":"gpt-4o","state":"cooling",)"
      R"("until":"2027-01-15T08:00:07Z","resumes_in_ms":7500,"reason":"429"}},{{"model":"o1","state":"probing",)"
      R"("until":null,"resumes_in_ms":0,"reason":"429"}}],"quota":null,"token":null}},{{"label":"old","fingerprint":"sk-...Wq9z",)"
      R"("upstream":"https://api.openai.com/v1","serves":null,"state":"disabled","until":null,"resumes_in_ms":0,)"
      R"("reason":"401 \"invalid\\key\"\n","ok":0,"err":0,"last_status":null,"last_error":null,"in_flight":0,)"
      R"("max_concurrent":null,"websockets":0,"sessions":0,"today":{},)"
      R"("total":{},"replays":{},"limits":[],"models":[],"quota":null,"token":null}}]}}],)"
      R"("captures":{{"entries":7,"size":200,"bytes":9000}}}})",
      k_version, usage_zero, usage_zero, usage_zero, usage_zero);
  EXPECT_EQ(status_json(status_reports(), k_status_now, info), expected);
}

TEST(StatusJson, EachOwnLimitShowsItsUseAndWhenItsWindowResets) {
  std::vector<PoolReport> pools = status_reports();
  pools[0].keys[1].limits = {{"requests_per_minute", "requests", "minute", 2, 2, k_status_now + 34s},
                             {"tokens_per_day", "tokens", "day", 2'500'000, 2'000'000, k_status_now + 10h}};
  std::string text = status_json(pools, k_status_now, InstanceInfo{});
  EXPECT_NE(text.find(R"("limits":[{"name":"requests_per_minute","used":2,"limit":2,"per":"minute",)"
                      R"("resets":"2027-01-15T08:00:34Z","resets_in_ms":34000},{"name":"tokens_per_day",)"
                      R"("used":2500000,"limit":2000000,"per":"day","resets":"2027-01-15T18:00:00Z",)"
                      R"("resets_in_ms":36000000}])"),
            std::string::npos)
      << text;
}

TEST(StatusJson, ProblemIsAStringWhenThePoolFileIsUnusable) {
  InstanceInfo info{1, 0, "/k.toml", "keys.toml:3:1: unknown setting \"x\"", "127.0.0.1:1"};
  std::optional<util::Json> json = util::parse_json(status_json({}, k_status_now, info));
  ASSERT_TRUE(json);
  EXPECT_EQ(json->string_at("problem"), "keys.toml:3:1: unknown setting \"x\"");
  EXPECT_TRUE(json->find("pools")->is_array());
  EXPECT_TRUE(json->find("pools")->items().empty());
}

TEST(StatusJson, InvalidUtf8InALabelIsReplacedNotEmitted) {
  std::vector<PoolReport> pools = status_reports();
  pools[0].keys[0].label = "te\xFFm";
  std::string text = status_json(pools, k_status_now, InstanceInfo{});
  EXPECT_EQ(text.find('\xFF'), std::string::npos);
  EXPECT_NE(text.find("\"te\xEF\xBF\xBDm\""), std::string::npos);
  EXPECT_TRUE(util::parse_json(text));
}

// The limits a key's provider last reported, by kind, with only the figures
// it gave; a kind it never reported is left out.
TEST(StatusJson, QuotaShowsEachReportedLimit) {
  std::vector<PoolReport> pools = status_reports();
  pool::KeyQuota quota;
  quota.reported = k_status_now - 1s;
  quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::requests)) = {500, 0, k_status_now + 2500ms};
  quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::tokens)) = {30000, 1200, k_status_now - 1s};
  quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::unified)) = {std::nullopt, 58, std::nullopt};
  pools[0].keys[0].health.quota = quota;
  std::string text = status_json(pools, k_status_now, InstanceInfo{});
  EXPECT_NE(text.find(R"("quota":{"requests":{"limit":500,"remaining":0,"reset":"2027-01-15T08:00:02Z",)"
                      R"("resets_in_ms":2500},"tokens":{"limit":30000,"remaining":1200,)"
                      R"("reset":"2027-01-15T07:59:59Z","resets_in_ms":0},)"
                      R"("unified":{"limit":null,"remaining":58,"reset":null,"resets_in_ms":null}})"),
            std::string::npos)
      << text;
}

TEST(StatusJson, AKeyCmdKeyShowsItsTokensScheduleNeverTheToken) {
  std::vector<PoolReport> pools = status_reports();
  pools[0].keys[0].token =
      pool::TokenStatus{k_status_now + 10min, k_status_now + 5min, 3, "key_cmd: ERROR: offline"};
  std::string text = status_json(pools, k_status_now, InstanceInfo{});
  EXPECT_NE(text.find(R"("models":[{"model":"gpt-4o")"), std::string::npos);
  EXPECT_NE(text.find(R"("token":{"expires":"2027-01-15T08:10:00Z","next_run":"2027-01-15T08:05:00Z",)"
                      R"("refreshes":3,"error":"key_cmd: ERROR: offline"}})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("token":null)"), std::string::npos) << "the other key has none: " << text;
}

// Usage counters pass 2^53; /status prints them as exact integers, never as
// rounded floats.
TEST(StatusJson, CountersAboveTwoToThe53AreExactIntegers) {
  std::vector<PoolReport> pools = status_reports();
  pools[0].keys[0].health.total.input_tokens = std::numeric_limits<std::uint64_t>::max();
  pools[0].keys[0].health.total.output_tokens = 9007199254740993; // 2^53 + 1
  pools[0].keys[0].health.ok_count = 27021597764222976;           // 3 x 2^53
  std::string text = status_json(pools, k_status_now, InstanceInfo{});
  EXPECT_NE(text.find(R"("input_tokens":18446744073709551615,"output_tokens":9007199254740993})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("ok":27021597764222976,)"), std::string::npos) << text;
  std::optional<util::Json> back = util::parse_json(text);
  ASSERT_TRUE(back);
  const util::Json& total = *back->find("pools")->items()[0].find("keys")->items()[0].find("total");
  EXPECT_EQ(total.find("input_tokens")->as_unsigned(), std::numeric_limits<std::uint64_t>::max());
}

} // namespace
} // namespace keyshim::server
