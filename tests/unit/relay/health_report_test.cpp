// The relay's translation of a policy verdict into a pool report.
#include "relay/health_report.hpp"

#include <gtest/gtest.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;
using pool::FailureClass;

policy::Outcome response(int status) {
  policy::Outcome outcome;
  outcome.status = status;
  return outcome;
}

policy::Outcome transport(policy::TransportFailure failure) {
  policy::Outcome outcome;
  outcome.transport = failure;
  return outcome;
}

policy::Verdict verdict(policy::HealthChange change, policy::Scope scope = policy::Scope::key) {
  policy::Verdict v;
  v.change = change;
  v.scope = scope;
  return v;
}

TEST(HealthReport, CarriesTheVerdictsChangeScopeCooldownAndReason) {
  policy::Verdict cool = verdict(policy::HealthChange::cool, policy::Scope::model);
  cool.action = policy::Action::next_key;
  cool.cooldown = 30s;
  cool.rate_limited = true;
  cool.reason = "429";
  pool::Report report = health_report(response(429), cool);
  EXPECT_EQ(report.change, pool::Change::cool);
  EXPECT_EQ(report.status, 429);
  EXPECT_EQ(report.cooldown, 30s);
  EXPECT_TRUE(report.rate_limited);
  EXPECT_EQ(report.scope, pool::Scope::model);
  EXPECT_EQ(report.reason, "429");
  EXPECT_EQ(report.failure, FailureClass::rate_limit);
}

TEST(HealthReport, MapsEveryHealthChange) {
  const std::pair<policy::HealthChange, pool::Change> pairs[] = {
      {policy::HealthChange::success, pool::Change::success},
      {policy::HealthChange::failure, pool::Change::failure},
      {policy::HealthChange::cool, pool::Change::cool},
      {policy::HealthChange::disable, pool::Change::disable},
      {policy::HealthChange::none, pool::Change::none},
  };
  for (const auto& [change, expected] : pairs) {
    pool::Report report = health_report(response(503), verdict(change));
    EXPECT_EQ(report.change, expected);
    EXPECT_EQ(report.scope, pool::Scope::key);
  }
}

TEST(HealthReport, ATransportFailureHasStatusZeroAndCountsAsTransport) {
  for (policy::TransportFailure failure :
       {policy::TransportFailure::connect, policy::TransportFailure::tls,
        policy::TransportFailure::closed_before_response, policy::TransportFailure::first_byte_timeout}) {
    pool::Report report = health_report(transport(failure), verdict(policy::HealthChange::failure));
    EXPECT_EQ(report.status, 0);
    EXPECT_EQ(report.failure, FailureClass::transport);
  }
}

TEST(HealthReport, AKeyThatDidItsJobHasNoFailureClass) {
  EXPECT_FALSE(health_report(response(200), verdict(policy::HealthChange::success)).failure);
  EXPECT_FALSE(health_report(response(400), verdict(policy::HealthChange::none)).failure);
  EXPECT_FALSE(health_report(response(404), verdict(policy::HealthChange::none)).failure);
}

TEST(HealthReport, ClassifiesFailuresForTheUsageCounts) {
  using policy::HealthChange;
  EXPECT_EQ(failure_class(response(401), verdict(HealthChange::disable)), FailureClass::auth);
  EXPECT_EQ(failure_class(response(403), verdict(HealthChange::disable)), FailureClass::auth);
  EXPECT_EQ(failure_class(response(402), verdict(HealthChange::disable)), FailureClass::quota);
  // insufficient_quota in a 429 disables: out of credit.
  EXPECT_EQ(failure_class(response(429), verdict(HealthChange::disable)), FailureClass::quota);
  EXPECT_EQ(failure_class(response(402), verdict(HealthChange::cool)), FailureClass::quota);
  EXPECT_EQ(failure_class(response(429), verdict(HealthChange::cool)), FailureClass::rate_limit);
  policy::Verdict rate_limited = verdict(HealthChange::cool);
  rate_limited.rate_limited = true;
  EXPECT_EQ(failure_class(response(503), rate_limited), FailureClass::rate_limit);
  EXPECT_EQ(failure_class(response(503), verdict(HealthChange::failure)), FailureClass::server);
  EXPECT_EQ(failure_class(response(529), verdict(HealthChange::cool)), FailureClass::server);
}

TEST(HealthReport, ACommittedResponseIsASuccessWithoutAFailureClass) {
  pool::Report report = served_report(206);
  EXPECT_EQ(report.change, pool::Change::success);
  EXPECT_EQ(report.status, 206);
  EXPECT_EQ(report.cooldown, 0ms);
  EXPECT_FALSE(report.failure);
  EXPECT_TRUE(report.reason.empty());
}

} // namespace
} // namespace keyshim::relay
