#include "relay/quota_report.hpp"

#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {

pool::QuotaReport quota_report(const policy::Quota& quota, util::TimePoint now,
                               std::chrono::milliseconds max_cooldown) {
  pool::QuotaReport report;
  report.quota.kinds = quota.kinds;
  report.quota.reported = now;
  if (std::optional<policy::SetAside> aside = policy::quota_set_aside(quota, now, max_cooldown)) {
    report.set_aside = aside->wait;
    report.reason = std::move(aside->reason);
  }
  return report;
}

std::optional<pool::QuotaReport> read_quota_report(const ResponseHead& head, const util::Clock& wall,
                                                   std::chrono::milliseconds max_cooldown) {
  std::optional<policy::QuotaReader> reader; // made for the first candidate: most heads have none
  for (const auto& field : head) {
    if (policy::QuotaReader::candidate(field.name_string())) {
      if (!reader) {
        reader.emplace();
      }
      reader->add(field.name_string(), field.value());
    }
  }
  if (!reader || !reader->seen()) {
    return std::nullopt;
  }
  const util::TimePoint now = wall.now();
  std::optional<policy::Quota> quota = reader->read(now);
  if (!quota) {
    return std::nullopt;
  }
  return quota_report(*quota, now, max_cooldown);
}

void log_set_aside(std::string_view label, const std::string* model, const pool::QuotaReport& quota) {
  if (quota.set_aside <= std::chrono::milliseconds(0)) {
    return;
  }
  util::log_info("key {} set aside {}{}: {}", label, util::format_duration(quota.set_aside),
                 model ? fmt::format(" for model {}", *model) : std::string(), quota.reason);
}

} // namespace keyshim::relay
