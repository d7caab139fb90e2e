#pragma once
// The bodies of GET /health and GET /status. Never key material: keys appear
// only as label and fingerprint.
#include "pool/key_pool.hpp"

#include <string>
#include <vector>

namespace keyshim::server {

// {"status":"ok","keys":{"total":3,"available":2,"cooling":1,"disabled":0}};
// "unavailable" when no key is available.
std::string health_json(const pool::Counts& counts);

// {"version":..,"config":..,"problem":..,"totals":{..},"keys":[{label, fingerprint,
// upstream, state, until, resumes_in_ms, reason, ok, err, last_status, in_flight}]}
std::string status_json(const std::vector<pool::KeySnapshot>& keys, const pool::Counts& counts,
                        util::TimePoint now, const std::string& config_path, const std::string& problem);

// "2026-11-29T21:40:01Z".
std::string rfc3339_utc(util::TimePoint t);

} // namespace keyshim::server
