#pragma once
// The body of GET /metrics: the Prometheus text exposition format, version
// 0.0.4. Keys appear only as their label, never as key material or even
// fingerprint (a label is what an operator's dashboards and alerts name).
#include "server/status_json.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace keyshim::server {

// The Content-Type Prometheus expects for the text format.
inline constexpr std::string_view k_metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

// Every family once, with its # HELP and # TYPE lines, its samples together:
// keyshim_info, keyshim_config_*, keyshim_pool_keys{pool,state} and, per key
// (labels pool, key), up, state, cooldown and per-model cooldown (model),
// in-flight, and the counters since start: attempts, failures by class,
// ok responses, input/output tokens and body bytes. A family without
// samples is left out. Pure: `now` only turns cooldown ends into seconds.
std::string metrics_text(const std::vector<PoolReport>& pools, util::TimePoint now, const InstanceInfo& info);

// `value` as a label value between double quotes: backslash, double quote
// and newline escaped as the exposition format requires.
std::string escape_label_value(std::string_view value);

} // namespace keyshim::server
