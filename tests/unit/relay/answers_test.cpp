#include "relay/answers.hpp"
#include "relay/redact.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using Fields = std::vector<std::pair<std::string, std::string>>;

std::optional<std::string> field(const Answer& answer, std::string_view name) {
  for (const auto& [n, v] : answer.headers) {
    if (n == name) {
      return v;
    }
  }
  return std::nullopt;
}

// --- serialize --------------------------------------------------------------

TEST(Serialize, WritesStatusFieldsContentLengthAndBody) {
  Answer answer{429, "", {{"Retry-After", "7"}, {"Content-Type", "application/json"}}, "hello"};
  EXPECT_EQ(serialize(answer, false, false), "HTTP/1.1 429 Too Many Requests\r\n"
                                             "Retry-After: 7\r\n"
                                             "Content-Type: application/json\r\n"
                                             "Content-Length: 5\r\n"
                                             "\r\n"
                                             "hello");
}

TEST(Serialize, KeepsTheUpstreamsReasonPhrase) {
  Answer answer{400, "Bad Thing Happened", {}, ""};
  EXPECT_EQ(serialize(answer, false, false), "HTTP/1.1 400 Bad Thing Happened\r\nContent-Length: 0\r\n\r\n");
}

TEST(Serialize, HeadRequestGetsTheLengthButNoBody) {
  Answer answer{503, "", {{"Content-Type", "application/json"}}, "{\"error\":1}"};
  EXPECT_EQ(serialize(answer, true, false), "HTTP/1.1 503 Service Unavailable\r\n"
                                            "Content-Type: application/json\r\n"
                                            "Content-Length: 11\r\n"
                                            "\r\n");
}

TEST(Serialize, AddsConnectionCloseOnlyWhenAsked) {
  Answer answer{502, "", {}, "x"};
  EXPECT_EQ(serialize(answer, false, true),
            "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
  EXPECT_EQ(serialize(answer, false, false).find("Connection"), std::string::npos);
}

// --- no_key_answer ----------------------------------------------------------

// Time is an input: the cooldown ends are relative to a fixed now.
const util::TimePoint k_now = util::TimePoint(std::chrono::hours(24 * 20000));

TEST(NoKeyAnswer, RetryAfterCountsToTheEarliestCooldownEnd) {
  Answer answer = no_key_answer({std::nullopt, k_now + 90s}, k_now);
  EXPECT_EQ(answer.status, 503);
  EXPECT_EQ(field(answer, "Content-Type"), "application/json");
  std::optional<std::string> retry_after = field(answer, "Retry-After");
  ASSERT_TRUE(retry_after);
  EXPECT_EQ(*retry_after, "90");
  EXPECT_NE(answer.body.find("no_key_available"), std::string::npos) << answer.body;
}

TEST(NoKeyAnswer, RetryAfterIsAtLeastOneSecond) {
  for (auto end : {k_now + 1ms, k_now - 5s}) {
    Answer answer = no_key_answer({std::nullopt, end}, k_now);
    EXPECT_EQ(field(answer, "Retry-After"), "1");
  }
}

TEST(NoKeyAnswer, KeysAtTheirOwnLimitsAreNamedAndRetryAfterCountsToTheWindowsEnd) {
  pool::Selection selection{std::nullopt, k_now + 34s};
  selection.over_limits = true;
  Answer answer = no_key_answer(selection, k_now);
  EXPECT_EQ(answer.status, 503);
  EXPECT_EQ(field(answer, "Retry-After"), "34");
  EXPECT_NE(answer.body.find("every key is at one of its own limits, cooling or disabled; the next one is "
                             "available in 34s"),
            std::string::npos)
      << answer.body;
}

TEST(NoKeyAnswer, NoRetryAfterWhenEveryKeyIsDisabled) {
  Answer answer = no_key_answer({std::nullopt, std::nullopt}, k_now);
  EXPECT_EQ(answer.status, 503);
  EXPECT_EQ(field(answer, "Retry-After"), std::nullopt);
  EXPECT_NE(answer.body.find("disabled"), std::string::npos) << answer.body;
  EXPECT_NE(answer.body.find("keyshim reload"), std::string::npos) << answer.body;
}

// --- unreachable_answer -----------------------------------------------------

// --- unserved_model_answer --------------------------------------------------

config::PoolConfig pool_with_auth(config::AuthStyle style) {
  config::PoolConfig pool;
  pool.name = "team-pool";
  pool.upstream.auth.style = style;
  return pool;
}

TEST(UnservedModelAnswer, Is404InOpenAisShapeNamingTheModelAndThePool) {
  Answer answer = unserved_model_answer("gpt-5", pool_with_auth(config::AuthStyle::bearer));
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(field(answer, "Content-Type"), "application/json");
  EXPECT_EQ(answer.body,
            R"x({"error":{"message":"keyshim: model \"gpt-5\" is not served by any key of pool )x"
            R"x(\"team-pool\" (see models and exclude_models in the pool file, or `keyshim )x"
            R"x(check`)","type":"keyshim_model_not_served","code":"model_not_found"}})x");
  EXPECT_EQ(unserved_model_answer("gpt-5", pool_with_auth(config::AuthStyle::api_key)).body, answer.body);
}

TEST(UnservedModelAnswer, TakesTheErrorShapeOfThePoolsApi) {
  Answer anthropic = unserved_model_answer("claude-x", pool_with_auth(config::AuthStyle::x_api_key));
  EXPECT_EQ(anthropic.body.rfind(R"({"type":"error","error":{"type":"not_found_error","message":"keyshim: )"
                                 R"(model \"claude-x\" is not served by any key of pool \"team-pool\")",
                                 0),
            0u)
      << anthropic.body;
  for (config::AuthStyle style : {config::AuthStyle::x_goog_api_key, config::AuthStyle::query}) {
    Answer google = unserved_model_answer("gemini-x", pool_with_auth(style));
    EXPECT_EQ(google.status, 404);
    EXPECT_EQ(google.body.rfind(R"({"error":{"code":404,"message":"keyshim: model \"gemini-x\")", 0), 0u)
        << google.body;
    EXPECT_NE(google.body.find(R"(,"status":"NOT_FOUND"}})"), std::string::npos) << google.body;
  }
}

TEST(UnreachableAnswer, NamesEachKeyTriedAndWhatItGot) {
  Answer answer = unreachable_answer({"k0: connect error", "team: tls handshake failed"});
  EXPECT_EQ(answer.status, 502);
  EXPECT_EQ(field(answer, "Content-Type"), "application/json");
  EXPECT_NE(answer.body.find("k0: connect error"), std::string::npos) << answer.body;
  EXPECT_NE(answer.body.find("team: tls handshake failed"), std::string::npos) << answer.body;
  EXPECT_NE(answer.body.find("keyshim_upstream_unreachable"), std::string::npos) << answer.body;
}

// --- upstream_error_answer --------------------------------------------------

struct ErrorPool {
  ErrorPool() : pool(keys(), config::Strategy::ordered, clock), redact(pool) {}

  static std::vector<config::KeyConfig> keys() {
    std::vector<config::KeyConfig> out(2);
    out[0].label = "raw";
    out[0].secret = util::Secret("sk-pool-raw-0001");
    out[1].label = "slashy";
    out[1].secret = util::Secret("sk/+=pool-0002");
    return out;
  }

  test::FakeClock clock;
  pool::KeyPool pool;
  Redactor redact;
};

TEST(UpstreamErrorAnswer, DropsHopByHopAndLengthFieldsAndKeepsTheRestInOrder) {
  ErrorPool pool;
  policy::Outcome outcome;
  outcome.status = 429;
  outcome.headers = {{"Connection", "keep-alive"},   {"Keep-Alive", "timeout=5"},
                     {"retry-after", "7"},           {"Transfer-Encoding", "chunked"},
                     {"content-length", "99"},       {"Content-Type", "application/json"},
                     {"Set-Cookie", "a=1"},          {"Set-Cookie", "b=2"},
                     {"Proxy-Authenticate", "Basic"}};
  Answer answer = upstream_error_answer(outcome, "Slow Down", "{}", pool.redact);
  EXPECT_EQ(answer.status, 429);
  EXPECT_EQ(answer.reason, "Slow Down");
  EXPECT_EQ(answer.headers, (Fields{{"retry-after", "7"},
                                    {"Content-Type", "application/json"},
                                    {"Set-Cookie", "a=1"},
                                    {"Set-Cookie", "b=2"}}));
  EXPECT_EQ(answer.body, "{}");
  EXPECT_EQ(serialize(answer, false, false), "HTTP/1.1 429 Slow Down\r\n"
                                             "retry-after: 7\r\n"
                                             "Content-Type: application/json\r\n"
                                             "Set-Cookie: a=1\r\n"
                                             "Set-Cookie: b=2\r\n"
                                             "Content-Length: 2\r\n"
                                             "\r\n"
                                             "{}");
}

TEST(UpstreamErrorAnswer, RedactsPoolKeysInFieldsAndBody) {
  ErrorPool pool;
  const std::string& raw = pool.pool.key(0).secret.fingerprint();
  const std::string& slashy = pool.pool.key(1).secret.fingerprint();
  policy::Outcome outcome;
  outcome.status = 401;
  outcome.headers = {{"Location", "/cb?key=sk%2F%2B%3Dpool-0002"}, {"X-Echo", "sk-pool-raw-0001"}};
  const std::string body = "{\"error\":{\"message\":\"Incorrect API key provided: sk-pool-raw-0001 "
                           "(sk/+=pool-0002)\"}}";
  Answer answer = upstream_error_answer(outcome, "", body, pool.redact);
  EXPECT_EQ(answer.headers, (Fields{{"Location", "/cb?key=" + slashy}, {"X-Echo", raw}}));
  EXPECT_EQ(answer.body,
            "{\"error\":{\"message\":\"Incorrect API key provided: " + raw + " (" + slashy + ")\"}}");

  std::string wire = serialize(answer, false, false);
  EXPECT_EQ(wire.find("sk-pool-raw-0001"), std::string::npos) << wire;
  EXPECT_EQ(wire.find("sk/+=pool-0002"), std::string::npos) << wire;
  EXPECT_EQ(wire.find("sk%2F%2B%3Dpool-0002"), std::string::npos) << wire;
  EXPECT_NE(wire.find("Content-Length: " + std::to_string(answer.body.size()) + "\r\n"), std::string::npos)
      << wire;
}

} // namespace
} // namespace keyshim::relay
