#pragma once
// KeyPool reports as the relay makes them for each kind of verdict, for the
// tests of the pool and of what reads its health (wait room, status line).
#include "pool/key_pool.hpp"

#include <chrono>
#include <string>

namespace keyshim::test {

// Reports as the relay makes them for each kind of verdict.
inline pool::Report success(int status) {
  pool::Report report;
  report.change = pool::Change::success;
  report.status = status;
  return report;
}

inline pool::Report failure(int status, std::chrono::milliseconds cooldown, const std::string& reason,
                            pool::Scope scope = pool::Scope::key) {
  pool::Report report;
  report.change = pool::Change::failure;
  report.status = status;
  report.cooldown = cooldown;
  report.scope = scope;
  report.reason = reason;
  report.failure = status == 0 ? pool::FailureClass::transport : pool::FailureClass::server;
  return report;
}

inline pool::Report cool(int status, std::chrono::milliseconds cooldown, bool rate_limited,
                         const std::string& reason, pool::Scope scope = pool::Scope::key) {
  pool::Report report;
  report.change = pool::Change::cool;
  report.status = status;
  report.cooldown = cooldown;
  report.rate_limited = rate_limited;
  report.scope = scope;
  report.reason = reason;
  report.failure = status == 429 ? pool::FailureClass::rate_limit : pool::FailureClass::server;
  return report;
}

inline pool::Report disable(int status, const std::string& reason) {
  pool::Report report;
  report.change = pool::Change::disable;
  report.status = status;
  report.reason = reason;
  report.failure = status == 401 ? pool::FailureClass::auth : pool::FailureClass::quota;
  return report;
}

inline pool::Report neutral(int status) {
  pool::Report report;
  report.status = status;
  return report;
}

} // namespace keyshim::test
