#include "relay/health_report.hpp"

#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

pool::Change change_of(policy::HealthChange change) {
  switch (change) {
  case policy::HealthChange::success:
    return pool::Change::success;
  case policy::HealthChange::failure:
    return pool::Change::failure;
  case policy::HealthChange::cool:
    return pool::Change::cool;
  case policy::HealthChange::disable:
    return pool::Change::disable;
  case policy::HealthChange::none:
    break;
  }
  return pool::Change::none;
}

} // namespace

std::optional<pool::FailureClass> failure_class(const policy::Outcome& outcome,
                                                const policy::Verdict& verdict) {
  using pool::FailureClass;
  if (outcome.transport != policy::TransportFailure::none) {
    return FailureClass::transport;
  }
  if (verdict.change == policy::HealthChange::success || verdict.change == policy::HealthChange::none) {
    return std::nullopt;
  }
  if (outcome.status == 401 || outcome.status == 403) {
    return FailureClass::auth;
  }
  if (verdict.change == policy::HealthChange::disable || outcome.status == 402) {
    return FailureClass::quota; // out of credit: 402, or insufficient_quota in a 429
  }
  return outcome.status == 429 || verdict.rate_limited ? FailureClass::rate_limit : FailureClass::server;
}

pool::Report health_report(const policy::Outcome& outcome, const policy::Verdict& verdict) {
  pool::Report report;
  report.change = change_of(verdict.change);
  report.status = outcome.status;
  report.cooldown = verdict.cooldown;
  report.rate_limited = verdict.rate_limited;
  report.scope = verdict.scope == policy::Scope::model ? pool::Scope::model : pool::Scope::key;
  report.reason = verdict.reason;
  report.failure = failure_class(outcome, verdict);
  return report;
}

pool::Report served_report(int status) {
  pool::Report report;
  report.change = pool::Change::success;
  report.status = status;
  return report;
}

void log_limit_reached(std::string_view label, const std::vector<pool::LimitUse>& limits,
                       util::TimePoint now) {
  for (const pool::LimitUse& use : limits) {
    if (use.used >= use.limit) {
      util::log_info("key {} at its own limit for {}: {} {}/{} per {}", label,
                     util::format_duration(std::chrono::ceil<std::chrono::seconds>(use.resets - now)),
                     use.what, use.used, use.limit, use.per);
    }
  }
}

void log_health_change(std::string_view label, const policy::Verdict& verdict, const std::string* model,
                       const pool::Streaks& streaks) {
  std::string scope = model ? fmt::format(" for model {}", *model) : std::string();
  switch (verdict.change) {
  case policy::HealthChange::success:
  case policy::HealthChange::none:
    break;
  case policy::HealthChange::failure:
    if (verdict.cooldown.count() > 0) {
      util::log_warn("key {} cooling {}{}: {} consecutive failures ({})", label,
                     util::format_duration(verdict.cooldown), scope, streaks.failures, verdict.reason);
    }
    break;
  case policy::HealthChange::cool:
    util::log_warn("key {} cooling {}{}: {}", label, util::format_duration(verdict.cooldown), scope,
                   verdict.reason);
    break;
  case policy::HealthChange::disable:
    // A reload keeps the health of unchanged keys, so only a new key (or a
    // restart) brings this one back: retrying a revoked key helps nobody.
    util::log_error("key {} disabled: {} (replace it in the pool file and run `keyshim reload`)", label,
                    verdict.reason);
    break;
  }
}

} // namespace keyshim::relay
