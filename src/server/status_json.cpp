#include "server/status_json.hpp"

#include "keyshim/version.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

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

} // namespace

std::string rfc3339_utc(util::TimePoint t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string health_json(const pool::Counts& counts) {
  return fmt::format(R"({{"status":"{}","keys":{}}})", counts.available > 0 ? "ok" : "unavailable",
                     counts_json(counts));
}

std::string status_json(const std::vector<pool::KeySnapshot>& keys, const pool::Counts& counts,
                        util::TimePoint now, const InstanceInfo& info) {
  std::string out = fmt::format(
      R"({{"version":{},"pid":{},"generation":{},"listen":{},"config":{},"problem":{},"totals":{},"keys":[)",
      quoted(k_version), info.pid, info.generation, quoted(info.listen), quoted(info.config_path),
      info.problem.empty() ? "null" : quoted(info.problem), counts_json(counts));
  bool first = true;
  for (const pool::KeySnapshot& key : keys) {
    const pool::KeyHealth& h = key.health;
    bool cooling = h.state == pool::KeyState::cooling;
    long long resumes_in_ms =
        cooling ? std::chrono::duration_cast<std::chrono::milliseconds>(h.until - now).count() : 0;
    out += fmt::format(
        R"({}{{"label":{},"fingerprint":{},"upstream":{},"state":"{}","until":{},"resumes_in_ms":{},)"
        R"("reason":{},"ok":{},"err":{},"last_status":{},"in_flight":{}}})",
        first ? "" : ",", quoted(key.label), quoted(key.fingerprint), quoted(key.upstream),
        pool::to_string(h.state), cooling ? quoted(rfc3339_utc(h.until)) : "null",
        cooling ? std::max(0LL, resumes_in_ms) : 0, h.reason.empty() ? "null" : quoted(h.reason), h.ok_count,
        h.error_count, h.last_status == 0 ? "null" : std::to_string(h.last_status), h.in_flight);
    first = false;
  }
  out += "]}";
  return out;
}

} // namespace keyshim::server
