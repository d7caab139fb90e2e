#include "server/status_json.hpp"

#include "keyshim/version.hpp"
#include "util/json.hpp"

#include <algorithm>
#include <ctime>

namespace keyshim::server {
namespace {

using util::Json;

Json status_text(std::string_view value) {
  return Json::make_string(std::string(value));
}

// A string, or null when it is empty.
Json text_or_null(std::string_view value) {
  return value.empty() ? Json() : status_text(value);
}

Json counts_json(const pool::Counts& c) {
  Json out;
  out.add("total", Json::make_number(c.total))
      .add("available", Json::make_number(c.available))
      .add("cooling", Json::make_number(c.cooling))
      .add("disabled", Json::make_number(c.disabled));
  return out;
}

// {"requests":..,"failures":{"rate_limit":..,...},"input_tokens":..,"output_tokens":..}
Json usage_json(const pool::UsageCounts& usage) {
  Json failures = Json::make_object();
  for (std::size_t i = 0; i < pool::k_failure_classes; ++i) {
    failures.add(pool::to_string(static_cast<pool::FailureClass>(i)),
                 Json::make_number(usage.failures.at(i)));
  }
  Json out;
  out.add("requests", Json::make_number(usage.requests))
      .add("failures", std::move(failures))
      .add("input_tokens", Json::make_number(usage.input_tokens))
      .add("output_tokens", Json::make_number(usage.output_tokens));
  return out;
}

long long ms_until(util::TimePoint until, util::TimePoint now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
}

// The models in trouble on one key: cooling, or past their cooldown and
// waiting for (or running) the one probe that tells whether it is over.
Json models_json(const std::vector<pool::ModelHealth>& models, util::TimePoint now) {
  Json out = Json::make_array();
  for (const pool::ModelHealth& m : models) {
    if (!m.cooled) {
      continue; // failures below the streak: nothing to show
    }
    bool cooling = m.cooling(now);
    Json model;
    model.add("model", status_text(m.model))
        .add("state", status_text(cooling     ? "cooling"
                                  : m.probing ? "probing"
                                              : "recovering"))
        .add("until", cooling ? status_text(rfc3339_utc(m.until)) : Json())
        .add("resumes_in_ms", Json::make_number(cooling ? ms_until(m.until, now) : 0))
        .add("reason", status_text(m.reason));
    out.push_back(std::move(model));
  }
  return out;
}

Json number_or_null(const std::optional<std::uint64_t>& value) {
  return value ? Json::make_number(*value) : Json();
}

// The limits the key's provider last reported, by kind, each with what it
// reported of them; null when it never reported any.
Json quota_json(const std::optional<pool::KeyQuota>& quota, util::TimePoint now) {
  if (!quota) {
    return Json();
  }
  Json out = Json::make_object();
  for (std::size_t i = 0; i < pool::k_quota_kinds; ++i) {
    const pool::QuotaFigures& f = quota->kinds.at(i);
    if (!f.limit && !f.remaining && !f.reset) {
      continue;
    }
    Json kind;
    kind.add("limit", number_or_null(f.limit))
        .add("remaining", number_or_null(f.remaining))
        .add("reset", f.reset ? status_text(rfc3339_utc(*f.reset)) : Json())
        .add("resets_in_ms", f.reset ? Json::make_number(std::max(0LL, ms_until(*f.reset, now))) : Json());
    out.add(pool::to_string(static_cast<pool::QuotaKind>(i)), std::move(kind));
  }
  return out;
}

Json strings_json(const std::vector<std::string>& items) {
  Json out = Json::make_array();
  for (const std::string& item : items) {
    out.push_back(status_text(item));
  }
  return out;
}

// Each of the key's own limits that is set, with its use in the current
// window and when that window ends.
Json limits_json(const std::vector<pool::LimitUse>& limits, util::TimePoint now) {
  Json out = Json::make_array();
  for (const pool::LimitUse& use : limits) {
    Json limit;
    limit.add("name", status_text(use.name))
        .add("used", Json::make_number(use.used))
        .add("limit", Json::make_number(use.limit))
        .add("per", status_text(use.per))
        .add("resets", status_text(rfc3339_utc(use.resets)))
        .add("resets_in_ms", Json::make_number(std::max(0LL, ms_until(use.resets, now))));
    out.push_back(std::move(limit));
  }
  return out;
}

// null for a key that serves every model, else its two pattern lists (a
// missing models list: every model but the excluded ones).
Json serves_json(const config::ModelFilter& filter) {
  if (!filter.restricted()) {
    return Json();
  }
  Json out;
  out.add("models", filter.models ? strings_json(*filter.models) : Json())
      .add("exclude_models", strings_json(filter.exclude_models));
  return out;
}

// The key's latest failed attempt and how long ago it was, null when none
// failed since keyshim started.
Json last_error_json(const std::optional<pool::LastError>& last, util::TimePoint now) {
  if (!last) {
    return Json();
  }
  Json out;
  out.add("status", last->status == 0 ? Json() : Json::make_number(last->status))
      .add("reason", status_text(last->reason))
      .add("at", status_text(rfc3339_utc(last->at)))
      .add("ago_ms", Json::make_number(std::max(0LL, -ms_until(last->at, now))));
  return out;
}

// A key_cmd key's token (never the token): when it expires, when its
// command runs next, how many tokens runs gave, and why the last run
// failed; null for other keys.
Json token_json(const std::optional<pool::TokenStatus>& token) {
  if (!token) {
    return Json();
  }
  Json out;
  out.add("expires", token->expires ? status_text(rfc3339_utc(*token->expires)) : Json())
      .add("next_run", token->next_run ? status_text(rfc3339_utc(*token->next_run)) : Json())
      .add("refreshes", Json::make_number(token->refreshes))
      .add("error", text_or_null(token->error));
  return out;
}

Json key_json(const pool::KeySnapshot& key, util::TimePoint now) {
  const pool::KeyHealth& h = key.health;
  bool cooling = h.state == pool::KeyState::cooling;
  Json out;
  out.add("label", status_text(key.label))
      .add("fingerprint", status_text(key.fingerprint))
      .add("upstream", status_text(key.upstream))
      .add("serves", serves_json(key.models))
      .add("state", status_text(pool::to_string(h.state)))
      .add("until", cooling ? status_text(rfc3339_utc(h.until)) : Json())
      .add("resumes_in_ms", Json::make_number(cooling ? std::max(0LL, ms_until(h.until, now)) : 0))
      .add("reason", text_or_null(h.reason))
      .add("ok", Json::make_number(h.ok_count))
      .add("err", Json::make_number(h.error_count))
      .add("last_status", h.last_status == 0 ? Json() : Json::make_number(h.last_status))
      .add("last_error", last_error_json(h.last_error, now))
      .add("in_flight", Json::make_number(h.in_flight))
      .add("max_concurrent", key.max_concurrent > 0 ? Json::make_number(key.max_concurrent) : Json())
      .add("websockets", Json::make_number(h.websockets))
      .add("sessions", Json::make_number(key.sessions))
      .add("today", usage_json(h.today))
      .add("total", usage_json(h.total))
      .add("replays", usage_json(h.replays))
      .add("limits", limits_json(key.limits, now))
      .add("models", models_json(h.models, now))
      .add("quota", quota_json(h.quota, now))
      .add("token", token_json(key.token));
  return out;
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
  Json list = Json::make_array();
  for (const PoolReport& pool : pools) {
    Json entry;
    entry.add("name", status_text(pool.name))
        .add("route", status_text(pool.route))
        .add("status", status_text(pool.counts.available > 0 ? "ok" : "unavailable"))
        .add("keys", counts_json(pool.counts));
    list.push_back(std::move(entry));
  }
  Json out;
  out.add("status", status_text(health_word(pools)))
      .add("keys", counts_json(total_counts(pools)))
      .add("pools", std::move(list));
  return out.dump();
}

namespace {

Json captures_json(const InstanceInfo& info) {
  Json out;
  out.add("entries", Json::make_number(info.captures))
      .add("size", Json::make_number(info.capture_size))
      .add("bytes", Json::make_number(info.capture_bytes));
  return out;
}

} // namespace

std::string status_json(const std::vector<PoolReport>& pools, util::TimePoint now, const InstanceInfo& info) {
  Json list = Json::make_array();
  for (const PoolReport& pool : pools) {
    Json keys = Json::make_array();
    for (const pool::KeySnapshot& key : pool.keys) {
      keys.push_back(key_json(key, now));
    }
    Json entry;
    entry.add("name", status_text(pool.name))
        .add("route", status_text(pool.route))
        .add("upstream", status_text(pool.upstream))
        .add("totals", counts_json(pool.counts))
        .add("waiting", Json::make_number(pool.waiting))
        .add("oldest_wait_ms", Json::make_number(pool.oldest_wait.count()))
        .add("keys", std::move(keys));
    list.push_back(std::move(entry));
  }
  Json out;
  out.add("version", status_text(k_version))
      .add("pid", Json::make_number(info.pid))
      .add("generation", Json::make_number(info.generation))
      .add("listen", status_text(info.listen))
      .add("config", status_text(info.config_path))
      .add("problem", text_or_null(info.problem))
      .add("totals", counts_json(total_counts(pools)))
      .add("pools", std::move(list))
      .add("captures", captures_json(info));
  return out.dump();
}

} // namespace keyshim::server
