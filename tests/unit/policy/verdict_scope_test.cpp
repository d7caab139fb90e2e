// Whose health a verdict is about: the key's for every model, or one model's
// on the key (the "scope" column of the README's failover table).
#include "policy/failure_policy.hpp"
#include "policy/request_model.hpp"

#include "policy_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace keyshim::policy {
namespace {

using test::event_stream;
using test::provider_body;
using test::response;
using test::transport;

Scope scope_of(const Outcome& outcome) {
  test::FakeClock clock;
  return classify(outcome, {}, clock.now(), {}).scope;
}

TEST(VerdictScope, AccountWideFailuresAreTheKeys) {
  EXPECT_EQ(scope_of(response(401, {}, provider_body("openai_401_invalid_api_key.json"))), Scope::key);
  EXPECT_EQ(scope_of(response(402, {}, provider_body("anthropic_402_billing.json"))), Scope::key);
  EXPECT_EQ(scope_of(response(429, {}, provider_body("openai_429_insufficient_quota.json"))), Scope::key);
  EXPECT_EQ(scope_of(response(400, {}, provider_body("gemini_400_api_key_invalid.json"))), Scope::key);
  EXPECT_EQ(scope_of(response(403, {}, provider_body("gemini_403_permission_denied.json"))), Scope::key);
  EXPECT_EQ(scope_of(transport(TransportFailure::connect)), Scope::key);
  EXPECT_EQ(scope_of(transport(TransportFailure::tls)), Scope::key);
  EXPECT_EQ(scope_of(transport(TransportFailure::closed_before_response)), Scope::key);
}

TEST(VerdictScope, RateLimitsOutagesErrorEventsAndSilenceAreTheModels) {
  EXPECT_EQ(scope_of(response(429, {}, provider_body("openai_429_rate_limit.json"))), Scope::model);
  EXPECT_EQ(scope_of(response(429, {{"Retry-After", "20"}}, "")), Scope::model);
  EXPECT_EQ(scope_of(response(429, {}, provider_body("gemini_429_daily_quota.json"))), Scope::model);
  EXPECT_EQ(scope_of(response(529, {}, provider_body("anthropic_529_overloaded.json"))), Scope::model);
  for (int status : {500, 502, 503, 504}) {
    EXPECT_EQ(scope_of(response(status)), Scope::model) << status;
  }
  EXPECT_EQ(scope_of(event_stream(
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n")),
            Scope::model);
  EXPECT_EQ(scope_of(transport(TransportFailure::first_byte_timeout)), Scope::model);
}

TEST(RequestModel, TheModelMemberOfAJsonBody) {
  EXPECT_EQ(request_model("/v1/chat/completions", R"({"model":"gpt-4o","messages":[]})"), "gpt-4o");
  EXPECT_EQ(request_model("/v1/messages", " {\n \"max_tokens\": 5, \"model\" : \"claude-sonnet-4-5\"}"),
            "claude-sonnet-4-5");
  EXPECT_EQ(request_model("/v1/responses", R"({"input":[{"model":"not-this"}],"model":"o3"})"), "o3");
}

TEST(RequestModel, OnlyTheTopLevelMemberCounts) {
  EXPECT_EQ(request_model("/v1/chat/completions", R"({"messages":[{"content":"\"model\":\"x\""}]})"),
            std::nullopt);
  EXPECT_EQ(request_model("/v1/chat/completions", R"({"metadata":{"model":"nested"}})"), std::nullopt);
  EXPECT_EQ(request_model("/v1/chat/completions", R"({"text":"a \\\" b","model":"after-escapes"})"),
            "after-escapes");
}

TEST(RequestModel, GeminiNamesItInThePath) {
  EXPECT_EQ(request_model("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", ""),
            "gemini-2.5-pro");
  EXPECT_EQ(request_model("/v1beta/models/gemini-2.5-flash:generateContent", R"({"contents":[]})"),
            "gemini-2.5-flash");
  EXPECT_EQ(request_model("/v1/models/gpt-4o", ""), std::nullopt); // describing a model is not using it
}

TEST(RequestModel, NoModelWhenNothingNamesOne) {
  for (std::string_view body : {"", "not json", "[1,2]", "{}", R"({"model":42})", R"({"model":null})",
                                "{\"model\":\"open", R"({"a":{"b":[1,2,{"c":"}"}]},"model"})"}) {
    EXPECT_EQ(request_model("/v1/chat/completions", body), std::nullopt) << body;
  }
}

bool safe_identity(const std::string& id) {
  return !id.empty() && id.size() <= k_max_model_name &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// An unusable name is still a model: a 429 for it must cool that name, not
// the key for every model. Its identity is bounded and printable.
TEST(RequestModel, AnUnusableNameGetsABoundedIdentityOfItsOwn) {
  std::string long_name(k_max_model_name + 1, 'x');
  std::vector<std::string> names = {
      long_name,        std::string(100'000, 'y'),        "", "has space", "esc\\u0041pe",
      "gpt-4o\xC3\xA9", std::string("ctl\x01\x1b[31m", 9)};
  std::set<std::string> ids;
  for (const std::string& name : names) {
    std::optional<std::string> id = request_model("/v1/chat/completions", "{\"model\":\"" + name + "\"}");
    ASSERT_TRUE(id) << name;
    EXPECT_TRUE(safe_identity(*id)) << *id;
    EXPECT_LE(id->size(), k_model_identity_prefix + 17) << *id;
    EXPECT_NE(*id, name);
    ids.insert(*id);
  }
  EXPECT_EQ(ids.size(), names.size()); // each a model of its own
  EXPECT_EQ(request_model("/v1/chat/completions", "{\"model\":\"has space\"}")->substr(0, 10), "has_space#");
  EXPECT_EQ(request_model("/v1/chat/completions", "{\"model\":\"" + long_name + "\"}")->substr(0, 49),
            std::string(k_model_identity_prefix, 'x') + "#");
}

TEST(RequestModel, AnUnusableNameKeepsTheSameIdentityAndDiffersFromItsNeighbours) {
  std::string a = std::string(300, 'm') + "a";
  std::string b = std::string(300, 'm') + "b";
  auto id = [](const std::string& name) {
    return request_model("/v1/chat/completions", "{\"model\":\"" + name + "\"}");
  };
  EXPECT_EQ(id(a), id(a));
  EXPECT_NE(id(a), id(b)); // same shown prefix, different hash
  std::optional<std::string> gemini =
      request_model("/v1beta/models/" + std::string(250, 'g') + ":generateContent", "");
  ASSERT_TRUE(gemini);
  EXPECT_TRUE(safe_identity(*gemini));
  EXPECT_EQ(gemini->find('#'), k_model_identity_prefix);
}

TEST(RequestModel, ABigBodyIsSkippedThroughToALateModel) {
  std::string body = R"({"messages":[)";
  for (int i = 0; i < 20'000; ++i) {
    body += R"({"role":"user","content":"some {text} [with] \"brackets\""},)";
  }
  body += R"({"role":"user","content":"end"}],"model":"late"})";
  EXPECT_EQ(request_model("/v1/chat/completions", body), "late");
}

} // namespace
} // namespace keyshim::policy
