#include "cli/top_data.hpp"

#include "cli/status_table.hpp"

#include <algorithm>
#include <cmath>

namespace keyshim::cli::top {
namespace {

const util::Json k_null;

const util::Json& member(const util::Json& object, std::string_view name) {
  const util::Json* value = object.find(name);
  return value ? *value : k_null;
}

std::string text_of(const util::Json& object, std::string_view name) {
  return printable(object.string_at(name).value_or(""));
}

std::uint64_t count_of(const util::Json& object, std::string_view name) {
  const util::Json& value = member(object, name);
  if (std::optional<std::uint64_t> exact = value.as_unsigned()) {
    return *exact;
  }
  return value.is_number() && value.as_number() > 0 ? static_cast<std::uint64_t>(value.as_number()) : 0;
}

std::optional<long long> optional_integer(const util::Json& object, std::string_view name) {
  const util::Json& value = member(object, name);
  return value.is_number() ? std::optional<long long>(std::llround(value.as_number())) : std::nullopt;
}

Millis millis_of(const util::Json& object, std::string_view name, long long fallback = 0) {
  return Millis(json_integer(object, name, fallback));
}

Counts counts_of(const util::Json& counts) {
  return {json_integer(counts, "total"), json_integer(counts, "available"), json_integer(counts, "cooling"),
          json_integer(counts, "disabled")};
}

Usage usage_of(const util::Json& usage) {
  Usage out;
  out.requests = count_of(usage, "requests");
  for (const auto& [name, count] : member(usage, "failures").members()) {
    if (std::uint64_t n = count.as_unsigned().value_or(0); n > 0) {
      out.failures.emplace_back(printable(name), n);
    }
  }
  out.input_tokens = count_of(usage, "input_tokens");
  out.output_tokens = count_of(usage, "output_tokens");
  return out;
}

std::vector<ModelRow> models_of(const util::Json& models) {
  std::vector<ModelRow> out;
  for (const util::Json& model : models.items()) {
    out.push_back({text_of(model, "model"), text_of(model, "state"), millis_of(model, "resumes_in_ms"),
                   text_of(model, "reason")});
  }
  return out;
}

// The shapes are documented at read_snapshot: a quota counts down what is
// left, a limit of the key's own counts up what is used; both become "used of limit". A
// quota kind without both figures has no bar.
std::vector<Gauge> gauges_of(const util::Json& key) {
  std::vector<Gauge> out;
  for (const auto& [name, window] : member(key, "quota").members()) {
    const util::Json* remaining = window.find("remaining");
    double limit = member(window, "limit").as_number();
    if (remaining && remaining->is_number() && limit > 0) {
      out.push_back({"quota", printable(name), std::max(0.0, limit - remaining->as_number()), limit,
                     millis_of(window, "resets_in_ms", -1)});
    }
  }
  for (const util::Json& own : member(key, "limits").items()) {
    double limit = member(own, "limit").as_number();
    if (limit > 0) {
      out.push_back({"limit", text_of(own, "name"), member(own, "used").as_number(), limit,
                     millis_of(own, "resets_in_ms", -1)});
    }
  }
  return out;
}

std::optional<LastError> last_error_of(const util::Json& key) {
  const util::Json& last = member(key, "last_error");
  if (!last.is_object()) {
    return std::nullopt;
  }
  return LastError{static_cast<int>(json_integer(last, "status")), text_of(last, "reason"),
                   millis_of(last, "ago_ms")};
}

KeyRow key_of(const util::Json& key, const std::string& pool) {
  KeyRow row;
  row.pool = pool;
  row.label = text_of(key, "label");
  row.fingerprint = text_of(key, "fingerprint");
  row.id = pool + '\n' + row.fingerprint + '\n' + row.label;
  row.upstream = text_of(key, "upstream");
  row.state = text_of(key, "state");
  row.resumes_in = millis_of(key, "resumes_in_ms");
  row.reason = text_of(key, "reason");
  row.ok = count_of(key, "ok");
  row.err = count_of(key, "err");
  row.last_status = static_cast<int>(json_integer(key, "last_status"));
  row.last_error = last_error_of(key);
  row.in_flight = json_integer(key, "in_flight");
  row.max_concurrent = json_integer(key, "max_concurrent");
  row.websockets = optional_integer(key, "websockets");
  row.sessions = optional_integer(key, "sessions");
  row.today = usage_of(member(key, "today"));
  row.total = usage_of(member(key, "total"));
  row.models = models_of(member(key, "models"));
  row.gauges = gauges_of(key);
  return row;
}

PoolRow pool_of(const util::Json& pool) {
  PoolRow row;
  row.name = text_of(pool, "name");
  row.route = text_of(pool, "route");
  row.upstream = text_of(pool, "upstream");
  row.counts = counts_of(member(pool, "totals"));
  row.waiting = optional_integer(pool, "waiting");
  row.oldest_wait = millis_of(pool, "oldest_wait_ms");
  for (const util::Json& key : member(pool, "keys").items()) {
    row.keys.push_back(key_of(key, row.name));
  }
  return row;
}

} // namespace

Snapshot read_snapshot(const util::Json& status) {
  Snapshot out;
  out.version = text_of(status, "version");
  out.listen = text_of(status, "listen");
  out.pid = json_integer(status, "pid");
  out.config = text_of(status, "config");
  out.problem = status.string_at("problem").value_or(""); // kept whole: one line per problem
  out.totals = counts_of(member(status, "totals"));
  for (const util::Json& pool : member(status, "pools").items()) {
    out.pools.push_back(pool_of(pool));
  }
  return out;
}

// A sample older than a minute is dropped once a newer one is also a
// minute old, so the oldest kept spans the minute. A counter that went
// down belongs to a restarted instance: its key starts over.
void RateMeter::observe(Snapshot& snapshot, MonoTime at) {
  constexpr auto k_window = std::chrono::minutes(1);
  std::map<std::string, std::vector<std::pair<MonoTime, std::uint64_t>>> kept;
  for (PoolRow& pool : snapshot.pools) {
    for (KeyRow& key : pool.keys) {
      std::vector<std::pair<MonoTime, std::uint64_t>> samples = std::move(m_samples[key.id]);
      if (!samples.empty() && samples.back().second > key.total.requests) {
        samples.clear();
      }
      samples.emplace_back(at, key.total.requests);
      while (samples.size() > 2 && at - samples[1].first >= k_window) {
        samples.erase(samples.begin());
      }
      const auto& [since, then] = samples.front();
      double minutes = std::chrono::duration<double, std::ratio<60>>(at - since).count();
      if (samples.size() > 1 && minutes > 0) {
        key.per_minute = static_cast<double>(key.total.requests - then) / minutes;
      }
      kept[key.id] = std::move(samples);
    }
  }
  m_samples = std::move(kept); // keys no longer served are forgotten
}

} // namespace keyshim::cli::top
