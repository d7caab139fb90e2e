// The [[keys]] entries of one pool: their settings over the pool's, the
// secret from exactly one of key / key_env / key_cmd, and no key twice.
#include "config/pool_reader.hpp"
#include "config/proxy.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace keyshim::config {
namespace {

constexpr std::string_view k_key_sources[] = {"key", "key_env", "key_cmd"};

// The key's own limits over its pool's, counted in its pool's day.
Limits key_limits(const KeyEntry& entry, const UpstreamSettings& pool) {
  auto pick = [](const std::optional<std::uint64_t>& own, const std::optional<std::uint64_t>& pools) {
    return own.value_or(pools.value_or(0));
  };
  Limits limits;
  limits.requests_per_minute = pick(entry.requests_per_minute, pool.requests_per_minute);
  limits.requests_per_day = pick(entry.requests_per_day, pool.requests_per_day);
  limits.tokens_per_minute = pick(entry.tokens_per_minute, pool.tokens_per_minute);
  limits.tokens_per_day = pick(entry.tokens_per_day, pool.tokens_per_day);
  limits.day_start = pool.day_start;
  limits.day_zone = pool.day_zone;
  return limits;
}

} // namespace

std::vector<ReadKey> PoolReader::read_keys(const toml::node& node, const UpstreamSettings& pool,
                                           const std::string& context) {
  std::vector<ReadKey> keys;
  const toml::array* array = node.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    if (array == nullptr || !array->empty()) {
      report(node.source(), fmt::format("\"{}\" must be written as [[{}]] tables (double brackets), one "
                                        "per key",
                                        context, context));
    }
    return keys;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    if (auto key = read_key(*array->get(i)->as_table(), pool, fmt::format("{}[{}]", context, i + 1))) {
      keys.push_back(std::move(*key));
    }
  }
  return keys;
}

std::optional<ReadKey> PoolReader::read_key(const toml::table& table, const UpstreamSettings& pool,
                                            std::string context) {
  KeyEntry entry;
  read_settings(Section::key, table, {nullptr, nullptr, &entry}, context);

  if (entry.key_cmd_refresh && !table.contains("key_cmd")) {
    report(table.get("key_cmd_refresh")->source(),
           fmt::format("{}: \"key_cmd_refresh\" refreshes a key that \"key_cmd\" prints; remove it, or get "
                       "this key from a command",
                       context));
  }
  std::string source;
  std::optional<util::TimePoint> expires;
  std::optional<util::Secret> secret = resolve_secret(table, entry, context, source, expires);
  if (!secret) {
    return std::nullopt;
  }
  ReadKey read;
  read.label_at = table.get("label") ? table.get("label")->source() : table.source();
  read.entry_at = table.source();
  read.context = std::move(context);
  read.key.label = entry.label.value_or(secret->fingerprint());
  read.key.secret = std::move(*secret);
  read.key.base_url = entry.base_url.value_or(pool.base_url);
  read.key.auth = entry.auth.value_or(pool.auth);
  read.key.ca_file = entry.ca_file ? entry.ca_file : pool.ca_file;
  read.key.max_concurrent = entry.max_concurrent.value_or(pool.max_concurrent.value_or(0));
  read.key.models.models = entry.models ? entry.models : pool.models;
  read.key.models.exclude_models = entry.exclude_models.value_or(pool.exclude_models);
  read.key.limits = key_limits(entry, pool);
  // status, reload and env skip secrets and run in the user's shell, whose
  // proxy variables are not the server's: they read the file's setting only.
  ProxyChoice proxy = choose_proxy(read.key.base_url, pool.proxy,
                                   m_secrets == SecretResolution::resolve ? process_env() : EnvLookup{});
  read.key.proxy = std::move(proxy.proxy);
  if (!proxy.problem.empty() && std::none_of(m_problems.begin(), m_problems.end(), [&](const Problem& p) {
        return p.message == proxy.problem; // once, though every key of the pool shares it
      })) {
    report(std::move(proxy.problem));
  }
  read.key.source = std::move(source);
  if (entry.key_cmd) {
    read.key.command = KeyCommand{*entry.key_cmd, entry.key_cmd_refresh, expires};
  }
  return read;
}

std::optional<util::Secret> PoolReader::resolve_secret(const toml::table& table, KeyEntry& entry,
                                                       const std::string& context, std::string& source,
                                                       std::optional<util::TimePoint>& expires) {
  std::vector<std::string_view> given;
  for (std::string_view name : k_key_sources) {
    if (table.contains(name)) {
      given.push_back(name);
    }
  }
  if (given.empty()) {
    report(table.source(), fmt::format("{}: no key: give exactly one of \"key\", \"key_env\" or "
                                       "\"key_cmd\"",
                                       context));
    return std::nullopt;
  }
  if (given.size() > 1) {
    report(table.get(given[1])->source(),
           fmt::format("{}: {} are both given; keep exactly one of \"key\", \"key_env\" or \"key_cmd\"",
                       context,
                       given.size() == 2 ? fmt::format("\"{}\" and \"{}\"", given[0], given[1])
                                         : std::string("\"key\", \"key_env\" and \"key_cmd\"")));
    return std::nullopt;
  }
  const toml::source_region& where = table.get(given[0])->source();
  if (entry.key) {
    source = "key";
    return std::move(entry.key);
  }
  if (m_secrets == SecretResolution::skip) {
    // A stand-in unique per source, so duplicate detection still works.
    source = entry.key_env ? "key_env " + *entry.key_env : "key_cmd";
    std::string stand_in = "unresolved:" + source;
    if (entry.key_cmd) {
      for (const std::string& arg : *entry.key_cmd) {
        stand_in += " " + arg;
      }
    }
    return util::Secret(stand_in);
  }
  SecretOutcome outcome;
  if (entry.key_env) {
    source = "key_env " + *entry.key_env;
    outcome = secret_from_env(*entry.key_env);
  } else if (entry.key_cmd) {
    source = "key_cmd " + entry.key_cmd->front();
    outcome = secret_from_command(*entry.key_cmd);
  } else {
    return std::nullopt; // the value itself was invalid and has been reported
  }
  if (!outcome.secret) {
    report(where, fmt::format("{}: \"{}\" {}", context, given[0], outcome.error));
  }
  expires = outcome.expires;
  return std::move(outcome.secret);
}

void PoolReader::check_duplicates(const std::vector<ReadKey>& keys) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool same_key = false;
    for (std::size_t j = 0; j < i && !same_key; ++j) {
      // Health is tracked by fingerprint, and one key listed twice would be
      // tried twice on every failure.
      if (keys[i].key.secret.equals(keys[j].key.secret.reveal())) {
        report(keys[i].entry_at,
               fmt::format("{}: same key as {} (fingerprint {}); remove one of them", keys[i].context,
                           keys[j].context, keys[i].key.secret.fingerprint()));
        same_key = true;
      }
    }
    for (std::size_t j = 0; j < i && !same_key; ++j) {
      if (keys[i].key.label == keys[j].key.label) {
        report(keys[i].label_at, fmt::format("{}: label \"{}\" is already used by {}; labels must be "
                                             "unique",
                                             keys[i].context, keys[i].key.label, keys[j].context));
        break;
      }
    }
  }
}

} // namespace keyshim::config
