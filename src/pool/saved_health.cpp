#include "pool/saved_health.hpp"

#include "pool/model_health.hpp"
#include "pool/session_map.hpp"

#include <algorithm>
#include <limits>

namespace keyshim::pool {
namespace {

constexpr std::size_t k_max_text = 256; // reasons, model names, fingerprints

using util::Json;

Json time_json(util::TimePoint t) {
  auto ms = std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
  return Json::make_number(std::max<std::int64_t>(ms, 0));
}

Json streaks_into(Json object, const Streaks& streaks) {
  object.add("failures", Json::make_number(streaks.failures));
  object.add("rate_limits", Json::make_number(streaks.rate_limits));
  return object;
}

Json counts_json(const UsageCounts& counts) {
  Json failures = Json::make_object();
  for (std::size_t i = 0; i < k_failure_classes; ++i) {
    failures.add(to_string(static_cast<FailureClass>(i)), Json::make_number(counts.failures[i]));
  }
  Json out = Json::make_object();
  out.add("requests", Json::make_number(counts.requests));
  out.add("failures", std::move(failures));
  out.add("input_tokens", Json::make_number(counts.input_tokens));
  out.add("output_tokens", Json::make_number(counts.output_tokens));
  out.add("bytes", Json::make_number(counts.bytes));
  return out;
}

// The unsigned integer member `name`, 0 when absent or not one.
std::uint64_t count_at(const Json& object, std::string_view name) {
  const Json* value = object.find(name);
  return value ? value->as_unsigned().value_or(0) : 0;
}

int int_at(const Json& object, std::string_view name) {
  return static_cast<int>(std::min<std::uint64_t>(count_at(object, name), std::numeric_limits<int>::max()));
}

util::TimePoint time_at(const Json& object, std::string_view name) {
  // Milliseconds since the epoch, kept below what a TimePoint holds.
  constexpr std::uint64_t k_year_9999_ms = 253'402'300'799'000;
  auto ms = static_cast<std::int64_t>(std::min(count_at(object, name), k_year_9999_ms));
  return util::TimePoint(std::chrono::duration_cast<util::TimePoint::duration>(milliseconds(ms)));
}

std::string text_at(const Json& object, std::string_view name) {
  std::string text = object.string_at(name).value_or("");
  if (text.size() > k_max_text) {
    text.resize(k_max_text);
  }
  return text;
}

UsageCounts counts_from(const Json* json) {
  UsageCounts counts;
  if (json == nullptr) {
    return counts;
  }
  counts.requests = count_at(*json, "requests");
  if (const Json* failures = json->find("failures")) {
    for (std::size_t i = 0; i < k_failure_classes; ++i) {
      counts.failures[i] = count_at(*failures, to_string(static_cast<FailureClass>(i)));
    }
  }
  counts.input_tokens = count_at(*json, "input_tokens");
  counts.output_tokens = count_at(*json, "output_tokens");
  counts.bytes = count_at(*json, "bytes");
  return counts;
}

std::vector<SavedModel> models_from(const Json* json) {
  std::vector<SavedModel> models;
  if (json == nullptr) {
    return models;
  }
  for (const Json& item : json->items()) {
    if (models.size() == ModelTable::k_max_models) {
      break;
    }
    SavedModel model{text_at(item, "model"), time_at(item, "until_ms"), text_at(item, "reason"),
                     Streaks{int_at(item, "failures"), int_at(item, "rate_limits")}};
    if (!model.model.empty()) {
      models.push_back(std::move(model));
    }
  }
  return models;
}

Json quota_json(const KeyQuota& quota) {
  Json kinds = Json::make_object();
  for (std::size_t i = 0; i < k_quota_kinds; ++i) {
    const QuotaFigures& figures = quota.kinds[i];
    if (!figures.limit && !figures.remaining && !figures.reset) {
      continue;
    }
    Json item = Json::make_object();
    if (figures.limit) {
      item.add("limit", Json::make_number(*figures.limit));
    }
    if (figures.remaining) {
      item.add("remaining", Json::make_number(*figures.remaining));
    }
    if (figures.reset) {
      item.add("reset_ms", time_json(*figures.reset));
    }
    kinds.add(to_string(static_cast<QuotaKind>(i)), std::move(item));
  }
  Json out = Json::make_object();
  out.add("reported_ms", time_json(quota.reported));
  out.add("kinds", std::move(kinds));
  return out;
}

std::optional<std::uint64_t> optional_count(const Json& object, std::string_view name) {
  const Json* value = object.find(name);
  return value ? value->as_unsigned() : std::nullopt;
}

std::optional<KeyQuota> quota_from(const Json* json) {
  const Json* kinds = json ? json->find("kinds") : nullptr;
  if (kinds == nullptr) {
    return std::nullopt;
  }
  KeyQuota quota;
  quota.reported = time_at(*json, "reported_ms");
  for (std::size_t i = 0; i < k_quota_kinds; ++i) {
    if (const Json* item = kinds->find(to_string(static_cast<QuotaKind>(i)))) {
      QuotaFigures& figures = quota.kinds[i];
      figures.limit = optional_count(*item, "limit");
      figures.remaining = optional_count(*item, "remaining");
      if (item->find("reset_ms") != nullptr) {
        figures.reset = time_at(*item, "reset_ms");
      }
    }
  }
  return quota;
}

Json sessions_json(const std::vector<SavedSession>& sessions) {
  Json out = Json::make_array();
  for (const SavedSession& session : sessions) {
    Json item = Json::make_object();
    item.add("session", Json::make_number(session.session));
    item.add("last_use_ms", time_json(session.last_use));
    out.push_back(std::move(item));
  }
  return out;
}

std::vector<SavedSession> sessions_from(const Json* json) {
  std::vector<SavedSession> sessions;
  if (json == nullptr) {
    return sessions;
  }
  for (const Json& item : json->items()) {
    if (sessions.size() == SessionMap::k_default_capacity) {
      break;
    }
    if (std::uint64_t session = count_at(item, "session"); session != 0) {
      sessions.push_back(SavedSession{session, time_at(item, "last_use_ms")});
    }
  }
  return sessions;
}

Json budget_json(const BudgetUse::Saved& budget) {
  Json out = Json::make_object();
  out.add("minute_begins_ms", time_json(budget.minute.begins));
  out.add("minute_ends_ms", time_json(budget.minute.ends));
  out.add("minute_requests", Json::make_number(budget.minute_requests));
  out.add("minute_tokens", Json::make_number(budget.minute_tokens));
  out.add("day_begins_ms", time_json(budget.day.begins));
  out.add("day_ends_ms", time_json(budget.day.ends));
  out.add("day_requests", Json::make_number(budget.day_requests));
  out.add("day_tokens", Json::make_number(budget.day_tokens));
  return out;
}

BudgetUse::Saved budget_from(const Json* json) {
  BudgetUse::Saved budget;
  if (json == nullptr) {
    return budget;
  }
  budget.minute = Window{time_at(*json, "minute_begins_ms"), time_at(*json, "minute_ends_ms")};
  budget.minute_requests = count_at(*json, "minute_requests");
  budget.minute_tokens = count_at(*json, "minute_tokens");
  budget.day = Window{time_at(*json, "day_begins_ms"), time_at(*json, "day_ends_ms")};
  budget.day_requests = count_at(*json, "day_requests");
  budget.day_tokens = count_at(*json, "day_tokens");
  return budget;
}

} // namespace

util::Json to_json(const SavedKey& key) {
  Json out = Json::make_object();
  out.add("fingerprint", Json::make_string(key.fingerprint));
  out.add("state", Json::make_string(to_string(key.state)));
  out.add("until_ms", time_json(key.until));
  out.add("reason", Json::make_string(key.reason));
  out = streaks_into(std::move(out), key.streaks);
  out.add("ok", Json::make_number(key.ok_count));
  out.add("errors", Json::make_number(key.error_count));
  out.add("usage_day", Json::make_number(key.usage_day));
  out.add("today", counts_json(key.today));
  out.add("total", counts_json(key.total));
  Json models = Json::make_array();
  for (const SavedModel& model : key.models) {
    Json item = Json::make_object();
    item.add("model", Json::make_string(model.model));
    item.add("until_ms", time_json(model.until));
    item.add("reason", Json::make_string(model.reason));
    models.push_back(streaks_into(std::move(item), model.streaks));
  }
  out.add("models", std::move(models));
  if (key.quota) {
    out.add("quota", quota_json(*key.quota));
  }
  out.add("sessions", sessions_json(key.sessions));
  out.add("budget", budget_json(key.budget));
  return out;
}

std::optional<SavedKey> saved_key_from_json(const util::Json& json) {
  SavedKey key;
  key.fingerprint = text_at(json, "fingerprint");
  if (!json.is_object() || key.fingerprint.empty()) {
    return std::nullopt;
  }
  std::string state = text_at(json, "state");
  key.state = state == "cooling"    ? KeyState::cooling
              : state == "disabled" ? KeyState::disabled
                                    : KeyState::available;
  key.until = time_at(json, "until_ms");
  key.reason = text_at(json, "reason");
  key.streaks = Streaks{int_at(json, "failures"), int_at(json, "rate_limits")};
  key.ok_count = count_at(json, "ok");
  key.error_count = count_at(json, "errors");
  key.usage_day = int_at(json, "usage_day");
  key.today = counts_from(json.find("today"));
  key.total = counts_from(json.find("total"));
  key.models = models_from(json.find("models"));
  key.quota = quota_from(json.find("quota"));
  key.sessions = sessions_from(json.find("sessions"));
  key.budget = budget_from(json.find("budget"));
  return key;
}

} // namespace keyshim::pool
