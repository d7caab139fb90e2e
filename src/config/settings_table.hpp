#pragma once
// The one table of pool-file settings. It drives parsing and validation (the
// loader knows no setting by name except the three key sources), and tests
// hold keys.example.toml and the README reference to it.
#include "config/config.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace keyshim::config {

enum class Section { server, upstream, key };
// "server", "upstream", "keys": the table name as written in the file. The
// upstream settings are also those of each [pools.NAME] table, and the key
// settings those of its [[pools.NAME.keys]] entries.
const char* to_string(Section section);

enum class SettingType {
  listen,      // "127.0.0.1:8787", loopback only
  secret,      // a non-empty string that never appears in messages
  label,       // a key label (letters, digits and - _ . @ + / ~)
  env_name,    // the name of an environment variable
  string_list, // an array of strings
  command,     // a non-empty array of non-empty strings (argv)
  size,        // bytes, or "64MiB"
  duration,    // "10s", or whole seconds
  integer,
  url, // an upstream base_url
  auth,
  strategy,
  file, // a readable file; relative paths start at the pool file's directory
  // an HTTP proxy URL (config/proxy.hpp), or "" for none
  proxy,
  boolean, // true or false
  // an array of model name patterns (config/model_filter.hpp); `min` is the
  // fewest items it may hold
  model_patterns,
  count,       // a whole number, or a string with K, M or G: "200K", "2M"
  time_of_day, // "HH:MM"
  day_zone,    // "local" | "UTC" | "+HH:MM" | "-HH:MM"
  capture,     // "off" | "errors" | "all"
};

// A [[keys]] entry as written, before its pool's defaults fill its gaps.
struct KeyEntry {
  std::optional<std::string> label;
  std::optional<util::Secret> key;
  std::optional<std::string> key_env;
  std::optional<std::vector<std::string>> key_cmd;
  std::optional<milliseconds> key_cmd_refresh;
  std::optional<UpstreamUrl> base_url;
  std::optional<Auth> auth;
  std::optional<std::string> ca_file;
  std::optional<int> max_concurrent;
  std::optional<std::vector<std::string>> models;
  std::optional<std::vector<std::string>> exclude_models;
  std::optional<std::uint64_t> requests_per_minute;
  std::optional<std::uint64_t> requests_per_day;
  std::optional<std::uint64_t> tokens_per_minute;
  std::optional<std::uint64_t> tokens_per_day;
};

// A decoded value: which alternative depends on the SettingType.
using SettingValue = std::variant<std::string, util::Secret, std::vector<std::string>, std::int64_t,
                                  std::uint64_t, milliseconds, ListenAddress, UpstreamUrl, Auth, Strategy,
                                  ProxySetting, bool, DayZone, CaptureMode>;

// Where decoded values are stored; only the member for the setting's section is used.
struct SettingTarget {
  ServerSettings* server = nullptr;
  UpstreamSettings* upstream = nullptr;
  KeyEntry* key = nullptr;
};

struct Setting {
  std::string_view name;
  Section section;
  SettingType type;
  std::string_view default_text; // as written in TOML; "" when there is none
  bool reloadable;               // SIGHUP may change it; false: it takes a restart
  std::string_view doc;          // one line, for keys.example.toml and the README
  std::int64_t min = 0;          // bounds: integer value or count, size in bytes, duration in ms, items
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
  void (*apply)(SettingTarget& target, SettingValue&& value) = nullptr;
};

// Every setting, in the order the reference documents them.
const std::vector<Setting>& settings_table();

// The setting `name` in `section`, or nullptr.
const Setting* find_setting(Section section, std::string_view name);

} // namespace keyshim::config
