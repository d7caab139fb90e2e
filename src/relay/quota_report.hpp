#pragma once
// The rate limits a response head reports, read once per response, in the
// pool's terms: the figures to keep for the key and, when a limit is spent,
// how long the key rests (docs/behaviour.md §4.1).
#include "policy/quota.hpp"
#include "pool/key_pool.hpp"
#include "relay/beast.hpp"
#include "util/clock.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::relay {

// `quota` as the pool keeps it, reported at `now`, with its set-aside (at
// most `max_cooldown`) when a limit has nothing left.
pool::QuotaReport quota_report(const policy::Quota& quota, util::TimePoint now,
                               std::chrono::milliseconds max_cooldown);

// The rate limits of `head`, or nullopt when it has no rate-limit fields.
// Costs a look at the first bytes of each field name, and reads `wall` only
// when a field has a rate-limit name.
std::optional<pool::QuotaReport> read_quota_report(const ResponseHead& head, const util::Clock& wall,
                                                   std::chrono::milliseconds max_cooldown);

// The log line of a set-aside: `key team set aside 3s for model gpt-4o:
// quota: 0 requests left`. Nothing when the response left the key its quota.
void log_set_aside(std::string_view label, const std::string* model, const pool::QuotaReport& quota);

} // namespace keyshim::relay
