// keyshim check: load the pool file exactly as serve would, and either list
// every problem or print the key table. Exit 0 means serve would use it.
#include "cli/commands.hpp"
#include "config/loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace keyshim::cli {
namespace {

using Row = std::vector<std::string>;

bool any_key_restricted(const config::Config& config) {
  return std::any_of(config.pools.begin(), config.pools.end(), [](const config::PoolConfig& pool) {
    return std::any_of(pool.keys.begin(), pool.keys.end(),
                       [](const config::KeyConfig& key) { return key.models.restricted(); });
  });
}

// Labels and fingerprints only: key material has no printable form. The
// MODELS column appears when some key serves only some models.
void print_key_table(const config::Config& config) {
  const bool models = any_key_restricted(config);
  std::vector<Row> rows = {{"POOL", "LABEL", "FINGERPRINT", "UPSTREAM", "AUTH", "SOURCE"}};
  if (models) {
    rows.front().emplace_back("MODELS");
  }
  for (const config::PoolConfig& pool : config.pools) {
    for (const config::KeyConfig& key : pool.keys) {
      std::string upstream = key.base_url.text() + (key.proxy ? " via " + key.proxy->text() : std::string());
      rows.push_back({pool.name, key.label, key.secret.fingerprint(), upstream, key.auth.text(), key.source});
      if (models) {
        rows.back().push_back(key.models.restricted() ? key.models.text() : "all");
      }
    }
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += i + 1 < row.size() ? fmt::format("{:<{}}  ", row[i], widths[i]) : row[i];
    }
    fmt::print("{}\n", line);
  }
}

// "60 requests per minute, 2000000 tokens per day (days from 06:00 UTC)".
std::string limits_text(const config::Limits& limits) {
  std::string out;
  auto add = [&](std::uint64_t limit, const char* what, const char* per) {
    if (limit > 0) {
      out +=
          fmt::format("{}{} {}{} per {}", out.empty() ? "" : ", ", limit, what, limit == 1 ? "" : "s", per);
    }
  };
  add(limits.requests_per_minute, "request", "minute");
  add(limits.requests_per_day, "request", "day");
  add(limits.tokens_per_minute, "token", "minute");
  add(limits.tokens_per_day, "token", "day");
  if (limits.requests_per_day > 0 || limits.tokens_per_day > 0) {
    out += fmt::format(" (days from {:02}:{:02} {})", limits.day_start / 60, limits.day_start % 60,
                       limits.day_zone.text());
  }
  return out;
}

// The keys' own limits, when any is set: what `keyshim status` counts against.
void print_limits(const config::Config& config) {
  bool heading = false;
  for (const config::PoolConfig& pool : config.pools) {
    for (const config::KeyConfig& key : pool.keys) {
      if (!key.limits.any()) {
        continue;
      }
      if (!heading) {
        fmt::print("\nlimits of your own (keyshim status shows the use):\n");
        heading = true;
      }
      fmt::print("  {} {}: {}\n", pool.name, key.label, limits_text(key.limits));
    }
  }
}

int run_check(const std::string& path) {
  config::LoadResult result = config::load_pool_file(path);
  if (!result.ok()) {
    for (const config::Problem& problem : result.problems) {
      fmt::print(stderr, "{}\n", problem.text());
    }
    std::size_t count = result.problems.size();
    fmt::print(stderr, "keyshim: {}: {} problem{}; keyshim would not use this file\n", path, count,
               count == 1 ? "" : "s");
    return 1;
  }
  const config::Config& config = *result.config;
  print_key_table(config);
  fmt::print("\nroutes on http://{}:\n", config.server.listen.text());
  for (const config::PoolConfig& pool : config.pools) {
    fmt::print("  {:<12} -> pool {} ({}, strategy {}{})\n",
               pool.is_default() ? "/ (the rest)" : pool.route() + "/", pool.name,
               pool.upstream.base_url.text(), config::to_string(pool.upstream.strategy),
               pool.upstream.max_wait.count() > 0 ? ", waits for a key" : "");
  }
  print_limits(config);
  std::size_t count = config.key_count();
  fmt::print("\n{}: ok: {} key{} in {} pool{}, listen {}\n", path, count, count == 1 ? "" : "s",
             config.pools.size(), config.pools.size() == 1 ? "" : "s", config.server.listen.text());
  return 0;
}

} // namespace

Subcommand add_check(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "check", "validate the pool file (syntax, settings, permissions, key sources) and print its "
               "key table; exit 0 if serve would use it, 1 if not");
  add_config_option(*app, *path);
  return {app, [path] { return run_check(resolve_config_path(*path)); }};
}

} // namespace keyshim::cli
