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

// What /status reports besides the keys.
struct InstanceInfo {
  long pid = 0;       // lets `keyshim reload` signal the instance it talked to
  int generation = 0; // successful loads of the pool file, for reload to confirm
  std::string config_path;
  std::string problem; // why the pool file is unusable, "" when it is fine
  std::string listen;  // "127.0.0.1:8787"
};

// {"version":..,"pid":..,"generation":..,"listen":..,"config":..,"problem":..,
//  "totals":{..},"keys":[{label, fingerprint, upstream, state, until,
//  resumes_in_ms, reason, ok, err, last_status, in_flight}]}
std::string status_json(const std::vector<pool::KeySnapshot>& keys, const pool::Counts& counts,
                        util::TimePoint now, const InstanceInfo& info);

// "2026-11-29T21:40:01Z".
std::string rfc3339_utc(util::TimePoint t);

} // namespace keyshim::server
