#pragma once
// Building pools of made-up keys for the pool tests.
#include "config/config.hpp"
#include "pool/key_pool.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::test {

inline config::KeyConfig make_key(const std::string& label, const std::string& material = "") {
  config::KeyConfig key;
  key.label = label;
  key.secret = util::Secret(material.empty() ? "sk-test-" + label + "-0123456789" : material);
  key.base_url = config::UpstreamUrl{"https", "api.example.com", 443, ""};
  key.source = "key";
  return key;
}

inline std::vector<config::KeyConfig> make_keys(const std::vector<std::string>& labels) {
  std::vector<config::KeyConfig> keys;
  for (const std::string& label : labels) {
    keys.push_back(make_key(label));
  }
  return keys;
}

// Acquire with nothing excluded and return the chosen index (or -1).
inline int take(pool::KeyPool& pool, const std::vector<bool>& excluded = {}) {
  pool::Selection selection = pool.acquire(excluded);
  return selection.index ? static_cast<int>(*selection.index) : -1;
}

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
