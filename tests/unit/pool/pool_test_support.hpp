#pragma once
// Building pools of made-up keys for the pool tests.
#include "config/config.hpp"
#include "pool/key_pool.hpp"
#include "support/pool_reports.hpp"

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

} // namespace keyshim::test
