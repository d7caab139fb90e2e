#include "server/status_json.hpp"

#include "keyshim/version.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

namespace keyshim::server {
namespace {

std::string quoted(std::string_view text) {
  return fmt::format("\"{}\"", util::json_escape(text));
}

std::string counts_json(const pool::Counts& c) {
  return fmt::format(R"({{"total":{},"available":{},"cooling":{},"disabled":{}}})", c.total, c.available,
                     c.cooling, c.disabled);
}

// {"requests":..,"failures":{"rate_limit":..,...},"input_tokens":..,"output_tokens":..}
std::string usage_json(const pool::UsageCounts& usage) {
  std::string failures;
  for (std::size_t i = 0; i < pool::k_failure_classes; ++i) {
    failures += fmt::format(R"({}"{}":{})", i == 0 ? "" : ",",
                            pool::to_string(static_cast<pool::FailureClass>(i)), usage.failures.at(i));
  }
  return fmt::format(R"({{"requests":{},"failures":{{{}}},"input_tokens":{},"output_tokens":{}}})",
                     usage.requests, failures, usage.input_tokens, usage.output_tokens);
}

// The models in trouble on one key: cooling, or past their cooldown and
// waiting for (or running) the one probe that tells whether it is over.
std::string models_json(const std::vector<pool::ModelHealth>& models, util::TimePoint now) {
  std::string out = "[";
  for (const pool::ModelHealth& m : models) {
    if (!m.cooled) {
      continue; // failures below the streak: nothing to show
    }
    bool cooling = m.cooling(now);
    long long resumes_in_ms =
        cooling ? std::chrono::duration_cast<std::chrono::milliseconds>(m.until - now).count() : 0;
    out += fmt::format(R"({}{{"model":{},"state":"{}","until":{},"resumes_in_ms":{},"reason":{}}})",
                       out.size() == 1 ? "" : ",", quoted(m.model),
                       cooling ? "cooling" : m.probing ? "probing" : "recovering",
                       cooling ? quoted(rfc3339_utc(m.until)) : "null", resumes_in_ms, quoted(m.reason));
  }
  return out + "]";
}

std::string key_json(const pool::KeySnapshot& key, util::TimePoint now) {
  const pool::KeyHealth& h = key.health;
  bool cooling = h.state == pool::KeyState::cooling;
  long long resumes_in_ms =
      cooling ? std::chrono::duration_cast<std::chrono::milliseconds>(h.until - now).count() : 0;
  return fmt::format(
      R"({{"label":{},"fingerprint":{},"upstream":{},"state":"{}","until":{},"resumes_in_ms":{},)"
      R"("reason":{},"ok":{},"err":{},"last_status":{},"in_flight":{},"today":{},"total":{},"models":{}}})",
      quoted(key.label), quoted(key.fingerprint), quoted(key.upstream), pool::to_string(h.state),
      cooling ? quoted(rfc3339_utc(h.until)) : "null", cooling ? std::max(0LL, resumes_in_ms) : 0,
      h.reason.empty() ? "null" : quoted(h.reason), h.ok_count, h.error_count,
      h.last_status == 0 ? "null" : std::to_string(h.last_status), h.in_flight, usage_json(h.today),
      usage_json(h.total), models_json(h.models, now));
}

const char* health_word(const std::vector<PoolReport>& pools) {
  if (every_pool_serves(pools)) {
    return "ok";
  }
  return some_pool_serves(pools) ? "degraded" : "unavailable";
}

} // namespace

std::vector<PoolReport> pool_reports(const relay::PoolState& state) {
  std::vector<PoolReport> reports;
  for (const relay::ServedPool& served : state.pools) {
    reports.push_back({served.config->name, served.config->route(), served.config->upstream.base_url.text(),
                       served.keys->snapshot(), served.keys->counts()});
  }
  return reports;
}

pool::Counts total_counts(const std::vector<PoolReport>& pools) {
  pool::Counts total;
  for (const PoolReport& pool : pools) {
    total.total += pool.counts.total;
    total.available += pool.counts.available;
    total.cooling += pool.counts.cooling;
    total.disabled += pool.counts.disabled;
  }
  return total;
}

bool every_pool_serves(const std::vector<PoolReport>& pools) {
  return !pools.empty() &&
         std::all_of(pools.begin(), pools.end(), [](const PoolReport& p) { return p.counts.available > 0; });
}

bool some_pool_serves(const std::vector<PoolReport>& pools) {
  return std::any_of(pools.begin(), pools.end(), [](const PoolReport& p) { return p.counts.available > 0; });
}

std::string rfc3339_utc(util::TimePoint t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string health_json(const std::vector<PoolReport>& pools) {
  std::string out = fmt::format(R"({{"status":"{}","keys":{},"pools":[)", health_word(pools),
                                counts_json(total_counts(pools)));
  for (std::size_t i = 0; i < pools.size(); ++i) {
    out += fmt::format(R"({}{{"name":{},"route":{},"status":"{}","keys":{}}})", i == 0 ? "" : ",",
                       quoted(pools[i].name), quoted(pools[i].route),
                       pools[i].counts.available > 0 ? "ok" : "unavailable", counts_json(pools[i].counts));
  }
  return out + "]}";
}

std::string status_json(const std::vector<PoolReport>& pools, util::TimePoint now, const InstanceInfo& info) {
  std::string out = fmt::format(
      R"({{"version":{},"pid":{},"generation":{},"listen":{},"config":{},"problem":{},"totals":{},"pools":[)",
      quoted(k_version), info.pid, info.generation, quoted(info.listen), quoted(info.config_path),
      info.problem.empty() ? "null" : quoted(info.problem), counts_json(total_counts(pools)));
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const PoolReport& pool = pools[p];
    out += fmt::format(R"({}{{"name":{},"route":{},"upstream":{},"totals":{},"keys":[)", p == 0 ? "" : ",",
                       quoted(pool.name), quoted(pool.route), quoted(pool.upstream), counts_json(pool.counts));
    for (std::size_t k = 0; k < pool.keys.size(); ++k) {
      out += (k == 0 ? "" : ",") + key_json(pool.keys[k], now);
    }
    out += "]}";
  }
  return out + "]}";
}

} // namespace keyshim::server
