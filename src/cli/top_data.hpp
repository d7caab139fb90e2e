#pragma once
// What `keyshim top` shows, read from a GET /status answer: the instance,
// its pools and their keys, with the requests per minute measured between
// answers. Nothing here draws or talks to a terminal.
#include "util/json.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::cli::top {

using Millis = std::chrono::milliseconds;
using MonoTime = std::chrono::steady_clock::time_point;

// Requests, failures by class and tokens over one span (today, since start).
struct Usage {
  std::uint64_t requests = 0;
  std::vector<std::pair<std::string, std::uint64_t>> failures; // only classes that failed
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
};

// One model in trouble on a key.
struct ModelRow {
  std::string model;
  std::string state; // cooling, probing, recovering
  Millis resumes_in{0};
  std::string reason;
};

// A quota or a limit of the key's own as a bar: how much of `limit` is gone.
struct Gauge {
  std::string kind; // "quota" (the provider's) or "limit" (the key's own)
  std::string name; // "requests", "tokens", "requests_per_day"...
  double used = 0;
  double limit = 0;
  Millis resets_in{-1}; // negative when the answer does not say
};

struct LastError {
  int status = 0; // 0: a transport failure
  std::string reason;
  Millis ago{0}; // at the time of the answer
};

struct KeyRow {
  std::string id; // pool, fingerprint and label: the same key across answers
  std::string pool;
  std::string label;
  std::string fingerprint;
  std::string upstream;
  std::string state; // available, cooling, disabled
  Millis resumes_in{0};
  std::string reason;
  std::uint64_t ok = 0;
  std::uint64_t err = 0;
  int last_status = 0;
  std::optional<LastError> last_error;
  long long in_flight = 0;
  long long max_concurrent = 0; // 0: unlimited
  std::optional<long long> websockets;
  std::optional<long long> sessions;
  Usage today;
  Usage total;
  std::vector<ModelRow> models;
  std::vector<Gauge> gauges;
  std::optional<double> per_minute; // set by RateMeter once two answers are apart
};

struct Counts {
  long long total = 0;
  long long available = 0;
  long long cooling = 0;
  long long disabled = 0;
};

struct PoolRow {
  std::string name;
  std::string route;
  std::string upstream;
  Counts counts;
  std::optional<long long> waiting; // absent from instances older than top
  Millis oldest_wait{0};
  std::vector<KeyRow> keys;
};

struct Snapshot {
  std::string version;
  std::string listen;
  long long pid = 0;
  std::string config;
  std::string problem;
  Counts totals;
  std::vector<PoolRow> pools;
};

// The /status answer as top shows it. Text that came from the pool file or
// an upstream has its control characters replaced, so it cannot move the
// cursor. Quotas and own limits are read from these shapes, each optional:
//   "quota":  {"requests": {"limit": 100, "remaining": 40, "resets_in_ms": 30000},
//              "tokens": {...}}    (the provider's reported rate limits; any
//                                   figure may be null)
//   "limits": [{"name": "requests_per_day", "used": 2, "limit": 10, "resets_in_ms": 3600000}]
//                                  (the key's limits of its own: used of limit)
Snapshot read_snapshot(const util::Json& status);

// Requests per minute per key: the change of its request counter (since
// start) over the answers of the last minute, or between the last two when
// they are further apart.
class RateMeter {
public:
  // Records the counters of `snapshot`, fetched at `at`, and sets each key's
  // per_minute from the samples so far (unset for a key seen once).
  void observe(Snapshot& snapshot, MonoTime at);

private:
  std::map<std::string, std::vector<std::pair<MonoTime, std::uint64_t>>> m_samples; // by key id
};

} // namespace keyshim::cli::top
