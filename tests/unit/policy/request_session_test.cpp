// Which tool session a request belongs to: a session header, else the
// body's top-level prompt_cache_key (docs/behaviour.md §4).
#include "policy/request_model.hpp"
#include "policy/request_session.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::policy {
namespace {

constexpr std::string_view k_chat = "/v1/chat/completions";

TEST(RequestSession, TheHeaderNamesTheSession) {
  std::uint64_t a = request_session("3f1c-aaaa", k_chat, "{}");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(request_session("3f1c-aaaa", k_chat, R"({"prompt_cache_key":"other"})"), a);
  EXPECT_NE(request_session("3f1c-bbbb", k_chat, "{}"), a);
}

TEST(RequestSession, WithoutAHeaderTheBodysPromptCacheKeyNamesIt) {
  std::uint64_t body =
      request_session("", k_chat, R"({"model":"gpt-5","input":[],"prompt_cache_key":"conv-1"})");
  EXPECT_NE(body, 0u);
  // Codex sends the same id in both: one session, whichever it is read from.
  EXPECT_EQ(request_session("conv-1", k_chat, ""), body);
}

TEST(RequestSession, ARequestNamingNoSessionHasNone) {
  EXPECT_EQ(request_session("", k_chat, ""), 0u);
  EXPECT_EQ(request_session("", k_chat, R"({"model":"gpt-5","messages":[]})"), 0u);
  EXPECT_EQ(request_session("", k_chat, "not json at all"), 0u);
  EXPECT_EQ(request_session("", k_chat, R"({"prompt_cache_key":""})"), 0u);
  EXPECT_EQ(request_session("", k_chat, R"({"prompt_cache_key":42})"), 0u);
}

TEST(RequestSession, OnlyTheOpenAIApisThatTakeAPromptCacheKeyHaveTheirBodyRead) {
  const std::string body = R"({"model":"m","prompt_cache_key":"cache-1"})";
  std::uint64_t chat = request_session("", "/v1/chat/completions", body);
  EXPECT_NE(chat, 0u);
  EXPECT_EQ(request_session("", "/openai/v1/responses?x=1", body), chat);
  EXPECT_EQ(request_session("", "/v1/responses/", body), chat);
  EXPECT_EQ(request_session("", "/v1/messages", body), 0u);
  EXPECT_EQ(request_session("", "/v1beta/models/gemini-2.5-pro:generateContent", body), 0u);
  EXPECT_EQ(request_session("", "/v1/embeddings", body), 0u);
  EXPECT_NE(request_session("session-a", "/v1/messages", "{}"), 0u); // a header counts on every path
}

TEST(RequestSession, OnlyATopLevelMemberCounts) {
  EXPECT_EQ(request_session("", k_chat, R"({"messages":[{"content":"say \"prompt_cache_key\":\"x\""}]})"),
            0u);
  EXPECT_EQ(request_session("", k_chat, R"({"metadata":{"prompt_cache_key":"x"}})"), 0u);
  EXPECT_EQ(request_session("", k_chat, R"(["prompt_cache_key","x"])"), 0u);
  EXPECT_NE(request_session("", k_chat, R"({"metadata":{"prompt_cache_key":"x"}, "prompt_cache_key" : "y"})"),
            0u);
}

TEST(RequestSession, ALongIdIsHashedWhole) {
  std::string long_id(100'000, 'x');
  std::string other = long_id;
  other.back() = 'y';
  EXPECT_NE(request_session(long_id, k_chat, ""), request_session(other, k_chat, ""));
}

TEST(TopLevelString, ReadsTheRawValueOfATopLevelStringMember) {
  EXPECT_EQ(top_level_string(R"({"a":{"k":"no"},"k":"yes"})", "k"), "yes");
  EXPECT_EQ(top_level_string(R"({"k":"a\"b"})", "k"), R"(a\"b)");
  EXPECT_FALSE(top_level_string(R"({"k":null})", "k"));
  EXPECT_FALSE(top_level_string(R"({"k\u0000":"x"})", "k"));
  EXPECT_FALSE(top_level_string(R"({"k":"unterminated)", "k"));
  EXPECT_FALSE(top_level_string("", "k"));
}

} // namespace
} // namespace keyshim::policy
