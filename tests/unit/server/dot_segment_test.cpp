// Dot segments in request targets (issue 19, bug 5): a server resolves
// /alpha/../beta to /beta, so a path with a `.` or `..` segment, in any
// spelling a server might decode, would leave its pool's base path with that
// pool's key. keyshim refuses it before anything else.
#include "server/request_head.hpp"

#include <gtest/gtest.h>

namespace keyshim::server {
namespace {

namespace http = relay::http;

TEST(DotSegment, LiteralDotSegmentsAnywhereInThePathAreFound) {
  for (const char* target : {"/alpha/../beta/v1/messages", "/alpha/./v1/messages", "/..", "/.", "/alpha/..",
                             "/alpha/.", "/alpha/../", "/alpha/.?x=1", "/../x", "/v1/models/./"}) {
    EXPECT_TRUE(has_dot_segment(target)) << target;
  }
}

TEST(DotSegment, PercentEncodedDotsInAnyCaseAreFound) {
  for (const char* target : {"/alpha/%2e%2e/beta", "/alpha/%2E%2E/beta", "/alpha/.%2E/beta",
                             "/alpha/%2e./beta", "/alpha/%2E%2e/beta", "/alpha/%2e/beta", "/alpha/%2E"}) {
    EXPECT_TRUE(has_dot_segment(target)) << target;
  }
}

TEST(DotSegment, BackslashesAndEncodedSlashesSeparateSegments) {
  // Some servers read `\` as `/`, and some decode %2F and %5C before they
  // resolve dot segments: both are separators for this check.
  for (const char* target : {"/alpha/..\\beta", "/alpha\\..\\beta", "/alpha/..%2fbeta", "/alpha%2F..%2Fbeta",
                             "/alpha/%2e%2e%5cbeta", "/alpha/x%2F.", "/alpha/..%5C"}) {
    EXPECT_TRUE(has_dot_segment(target)) << target;
  }
}

TEST(DotSegment, ASegmentsParametersDoNotHideItsDots) {
  // Servlet containers read `..;x` as `..`.
  for (const char* target :
       {"/alpha/..;/beta", "/alpha/..;jsessionid=1/beta", "/alpha/.;x/beta", "/alpha/%2e%2e;x/beta"}) {
    EXPECT_TRUE(has_dot_segment(target)) << target;
  }
}

TEST(DotSegment, DotsInsideNamesOrInTheQueryAreNotSegments) {
  for (const char* target : {"/", "/v1/models", "/.well-known/x", "/v1/models/gpt-4.1", "/a..b/c", "/...",
                             "/..../x", "/a/.x", "/a/x.", "/a/..x", "/v1/files?path=../etc", "/v1?x=/./",
                             "/a/;../b", "/a/%2e%2e%2e", "/a/%2ex", "/a/%252e%252e/b", "/a/%2", "/a/%"}) {
    EXPECT_FALSE(has_dot_segment(target)) << target;
  }
}

TEST(CheckParsedHead, RefusesADotSegmentWith400BeforeItIsRouted) {
  relay::RequestHead head;
  head.method(http::verb::post);
  head.target("/alpha/%2E%2e/beta/v1/messages");
  head.version(11);
  head.set(http::field::host, "127.0.0.1:8787");
  HeadVerdict verdict = check_parsed_head(head);
  EXPECT_EQ(verdict.status, 400);
  EXPECT_NE(verdict.message.find("\".\" or \"..\" segment"), std::string::npos) << verdict.message;
  EXPECT_EQ(verdict.message.find("alpha"), std::string::npos) << "the message does not echo the target";
  head.target("/alpha/beta/v1/messages");
  EXPECT_EQ(check_parsed_head(head).status, 0);
}

} // namespace
} // namespace keyshim::server
