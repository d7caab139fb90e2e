#pragma once
// The bodies of GET /health and GET /status. Never key material: keys appear
// only as label and fingerprint.
#include "pool/key_pool.hpp"
#include "relay/pool_state.hpp"

#include <string>
#include <vector>

namespace keyshim::server {

// One pool as /health and /status report it.
struct PoolReport {
  std::string name;
  std::string route;    // "/" or "/anthropic"
  std::string upstream; // the pool's base_url
  std::vector<pool::KeySnapshot> keys;
  pool::Counts counts;
  std::size_t waiting = 0;                  // requests in its wait room (max_wait) now
  std::chrono::milliseconds oldest_wait{0}; // how long the first of them has waited
};

// Every pool of `state`, in the file's order (none when it is unusable).
std::vector<PoolReport> pool_reports(const relay::PoolState& state);

// The counts of all pools together.
pool::Counts total_counts(const std::vector<PoolReport>& pools);

// True when every pool has a key available now (and there is a pool).
bool every_pool_serves(const std::vector<PoolReport>& pools);
// True when at least one pool has a key available now.
bool some_pool_serves(const std::vector<PoolReport>& pools);

// {"status":"ok","keys":{"total":3,"available":2,"cooling":1,"disabled":0},
//  "pools":[{"name":"default","route":"/","status":"ok","keys":{..}}]}.
// "degraded" when some pool has no key available, "unavailable" when none has.
std::string health_json(const std::vector<PoolReport>& pools);

// What /status reports besides the keys.
struct InstanceInfo {
  long pid = 0;       // lets `keyshim reload` signal the instance it talked to
  int generation = 0; // successful loads of the pool file, for reload to confirm
  std::string config_path;
  std::string problem; // why the pool file is unusable, "" when it is fine
  std::string listen;  // "127.0.0.1:8787"
  // The capture ring (/captures): entries held, capture_size, memory held.
  std::size_t captures = 0;
  std::size_t capture_size = 0;
  std::uint64_t capture_bytes = 0;
};

// {"version":..,"pid":..,"generation":..,"listen":..,"config":..,"problem":..,
//  "totals":{..},"pools":[{"name","route","upstream","totals":{..},"waiting",
//  "oldest_wait_ms","keys":[{label, fingerprint, upstream, serves (null, or
//  {models, exclude_models}), state, until, resumes_in_ms, reason, ok, err,
//  last_status, last_error (null or {status, reason, at, ago_ms}), in_flight,
//  max_concurrent (null: unlimited), websockets, today:{usage}, total:{usage},
//  models, quota}]}],"captures":{entries,size,bytes}}
std::string status_json(const std::vector<PoolReport>& pools, util::TimePoint now, const InstanceInfo& info);

// "2026-11-29T21:40:01Z".
std::string rfc3339_utc(util::TimePoint t);

} // namespace keyshim::server
