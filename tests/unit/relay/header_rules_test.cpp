#include "relay/header_rules.hpp"
#include "relay/redact.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

TEST(HeaderRules, HopByHopAndConnectionNamedHeadersAreDropped) {
  httplib::Headers in = {{"Connection", "keep-alive, X-Secret-Hop"},
                         {"X-Secret-Hop", "1"},
                         {"Keep-Alive", "5"},
                         {"TE", "trailers"},
                         {"Upgrade", "h2c"},
                         {"Accept", "text/event-stream"}};
  httplib::Headers out = upstream_request_headers(in);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out.begin()->first, "Accept");
}

TEST(HeaderRules, ClientCredentialsHostLengthAndPseudoHeadersAreDropped) {
  httplib::Headers in = {{"Authorization", "Bearer x"},
                         {"x-api-key", "x"},
                         {"X-Goog-Api-Key", "x"},
                         {"api-key", "x"},
                         {"Host", "127.0.0.1"},
                         {"Content-Length", "3"},
                         {"REMOTE_ADDR", "127.0.0.1"},
                         {"LOCAL_PORT", "8787"},
                         {"anthropic-version", "2023-06-01"}};
  httplib::Headers out = upstream_request_headers(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.begin()->first, "anthropic-version");
}

TEST(HeaderRules, ValuesWithCrOrLfAreDropped) {
  httplib::Headers out = upstream_request_headers({{"X-Evil", "a\r\nInjected: 1"}, {"X-Fine", "ok"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.begin()->first, "X-Fine");
}

TEST(HeaderRules, ResponseFramingHeadersAreLeftToTheServer) {
  httplib::Headers out = client_response_headers({{"Content-Length", "10"},
                                                  {"Transfer-Encoding", "chunked"},
                                                  {"Connection", "close"},
                                                  {"Content-Encoding", "gzip"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.begin()->first, "Content-Encoding");
}

TEST(HeaderRules, QueryAuthReplacesEveryOccurrenceAndKeepsTheRest) {
  httplib::Headers headers;
  std::string target = "/v1/models?key=a&alt=sse&key=b";
  apply_auth({config::AuthStyle::query, "key"}, "sk/+=", headers, target);
  EXPECT_EQ(target, "/v1/models?alt=sse&key=sk%2F%2B%3D");
  EXPECT_TRUE(headers.empty());
}

TEST(HeaderRules, QueryParameterLookupDecodes) {
  EXPECT_EQ(query_param("/x?a=1&key=s%20k", "key"), "s k");
  EXPECT_EQ(query_param("/x?a=1", "key"), "");
  EXPECT_EQ(remove_query_param("/x?key=1", "key"), "/x");
  EXPECT_EQ(remove_query_param("/x", "key"), "/x");
}

TEST(HeaderRules, EachAuthStyleUsesItsHeader) {
  struct Case {
    config::AuthStyle style;
    const char* header;
    const char* value;
  };
  for (const Case& c : {Case{config::AuthStyle::bearer, "Authorization", "Bearer k"},
                        Case{config::AuthStyle::x_api_key, "x-api-key", "k"},
                        Case{config::AuthStyle::x_goog_api_key, "x-goog-api-key", "k"},
                        Case{config::AuthStyle::api_key, "api-key", "k"}}) {
    httplib::Headers headers;
    std::string target = "/v1";
    apply_auth({c.style, ""}, "k", headers, target);
    EXPECT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers.find(c.header)->second, c.value);
    EXPECT_EQ(target, "/v1");
  }
}

TEST(Redact, EveryOccurrenceOfAPoolKeyBecomesItsFingerprint) {
  std::vector<config::KeyConfig> keys(2);
  keys[0].label = "a";
  keys[0].secret = util::Secret("sk-first-key-000");
  keys[1].label = "b";
  keys[1].secret = util::Secret("sk-second-key-11");
  pool::KeyPool pool(keys, config::Strategy::ordered, util::system_clock());
  std::string out = redact_keys("bad key sk-first-key-000, also sk-first-key-000 and sk-second-key-11", pool);
  EXPECT_EQ(out, "bad key " + keys[0].secret.fingerprint() + ", also " + keys[0].secret.fingerprint() +
                     " and " + keys[1].secret.fingerprint());
}

} // namespace
} // namespace keyshim::relay
