// A response head's rate-limit fields, read once, in the pool's terms.
#include "relay/quota_report.hpp"

#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

const pool::QuotaFigures& requests(const pool::QuotaReport& report) {
  return report.quota.kinds.at(static_cast<std::size_t>(pool::QuotaKind::requests));
}

TEST(QuotaReport, AHeadWithoutRateLimitFieldsReportsNothing) {
  test::FakeClock clock;
  ResponseHead head;
  head.result(200);
  head.set(http::field::content_type, "application/json");
  head.insert("x-request-id", "req_1");
  EXPECT_FALSE(read_quota_report(head, clock, 24h));
}

TEST(QuotaReport, TheFiguresOfAHeadAreKeptWithWhenTheyArrived) {
  test::FakeClock clock;
  ResponseHead head;
  head.result(200);
  head.insert("X-RateLimit-Limit-Requests", "500");
  head.insert("X-RateLimit-Remaining-Requests", "499");
  head.insert("X-RateLimit-Reset-Requests", "120ms");
  std::optional<pool::QuotaReport> report = read_quota_report(head, clock, 24h);
  ASSERT_TRUE(report);
  EXPECT_EQ(requests(*report).limit, 500u);
  EXPECT_EQ(requests(*report).remaining, 499u);
  EXPECT_EQ(requests(*report).reset, clock.now() + 120ms);
  EXPECT_EQ(report->quota.reported, clock.now());
  EXPECT_EQ(report->set_aside, 0ms);
  EXPECT_EQ(report->reason, "");
}

TEST(QuotaReport, ASpentLimitCarriesItsSetAsideBoundedByMaxCooldown) {
  test::FakeClock clock;
  ResponseHead head;
  head.result(200);
  head.insert("anthropic-ratelimit-tokens-remaining", "0");
  head.insert("anthropic-ratelimit-tokens-reset", "2026-11-29T12:10:00Z");
  std::optional<pool::QuotaReport> report = read_quota_report(head, clock, 5min);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->set_aside, 5min);
  EXPECT_EQ(report->reason, "quota: 0 tokens left");
  EXPECT_EQ(read_quota_report(head, clock, 24h)->set_aside, 10min);
}

TEST(QuotaReport, AHeadWhoseFieldsAreAllGarbageReportsNothing) {
  test::FakeClock clock;
  ResponseHead head;
  head.result(429);
  head.insert("x-ratelimit-remaining-requests", "lots");
  head.insert("x-ratelimit-reset-requests", "whenever");
  EXPECT_FALSE(read_quota_report(head, clock, 24h));
}

} // namespace
} // namespace keyshim::relay
