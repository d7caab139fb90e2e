#include "config/loader.hpp"

#include "config/decode.hpp"
#include "config/file_access.hpp"
#include "config/nesting_limit.hpp"
#include "config/secret_source.hpp"
#include "config/settings_table.hpp"
#include "config/spelling.hpp"
#include "config/text_helpers.hpp"

#include <toml++/toml.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>

namespace keyshim::config {
namespace {

constexpr std::string_view k_key_sources[] = {"key", "key_env", "key_cmd"};

// "[server]", "[upstream] or a [[keys]] entry": where a setting name is valid.
std::string sections_holding(std::string_view name) {
  std::vector<std::string> places;
  for (const Setting& setting : settings_table()) {
    if (setting.name == name) {
      places.push_back(setting.section == Section::key ? "a [[keys]] entry"
                                                       : fmt::format("[{}]", to_string(setting.section)));
    }
  }
  std::string out;
  for (std::size_t i = 0; i < places.size(); ++i) {
    out += (i == 0 ? "" : " or ") + places[i];
  }
  return out;
}

// A [[keys]] entry after decoding, with the positions later checks point at.
struct ReadKey {
  KeyConfig key;
  std::string context; // "keys[2]": the entry's place in the file
  toml::source_region label_at;
  toml::source_region entry_at;
};

// Reads one parsed document into a Config, collecting every problem.
class PoolReader {
public:
  PoolReader(std::string file, SecretResolution secrets)
      : m_file(std::move(file)), m_base_dir(std::filesystem::path(m_file).parent_path().string()),
        m_secrets(secrets) {}

  LoadResult read(const toml::table& root);

  void report(const toml::source_region& where, std::string message) {
    m_problems.push_back({m_file, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column),
                          std::move(message)});
  }
  void report(std::string message) { m_problems.push_back({m_file, 0, 0, std::move(message)}); }

private:
  void read_top_level_names(const toml::table& root);
  const toml::table* section_table(const toml::table& root, std::string_view name);
  void read_settings(Section section, const toml::table& table, SettingTarget target,
                     const std::string& context);
  void report_unknown(Section section, const toml::key& key, const std::string& context);
  std::optional<ReadKey> read_key(const toml::table& table, std::size_t index);
  std::optional<util::Secret> resolve_secret(const toml::table& table, KeyEntry& entry,
                                             const std::string& context, std::string& source);
  void check_duplicates(const std::vector<ReadKey>& keys);
  std::vector<Problem> sorted_problems();

  std::string m_file;
  std::string m_base_dir;
  SecretResolution m_secrets;
  Config m_config;
  std::vector<Problem> m_problems;
};

LoadResult PoolReader::read(const toml::table& root) {
  m_config.path = m_file;
  read_top_level_names(root);
  // [server] and [upstream] first, whatever their order in the file: keys
  // take their defaults from [upstream].
  if (const toml::table* server = section_table(root, "server")) {
    read_settings(Section::server, *server, {&m_config.server, nullptr, nullptr}, "server");
  }
  if (const toml::table* upstream = section_table(root, "upstream")) {
    read_settings(Section::upstream, *upstream, {nullptr, &m_config.upstream, nullptr}, "upstream");
  }

  std::vector<ReadKey> keys;
  std::size_t entries = 0;
  if (const toml::node* node = root.get("keys")) {
    const toml::array* array = node->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
      if (array == nullptr || !array->empty()) {
        report(node->source(), "\"keys\" must be written as [[keys]] tables (double brackets), one per key");
      }
      entries = array == nullptr ? 1 : 0;
    } else {
      entries = array->size();
      for (std::size_t i = 0; i < array->size(); ++i) {
        if (auto key = read_key(*array->get(i)->as_table(), i)) {
          keys.push_back(std::move(*key));
        }
      }
    }
  }
  if (entries == 0) {
    report("no keys: add a [[keys]] entry");
  }
  check_duplicates(keys);

  if (!m_problems.empty()) {
    return {std::nullopt, sorted_problems()};
  }
  for (ReadKey& key : keys) {
    m_config.keys.push_back(std::move(key.key));
  }
  return {std::move(m_config), {}};
}

void PoolReader::read_top_level_names(const toml::table& root) {
  for (auto&& [key, node] : root) {
    std::string_view name = key.str();
    if (name == "server" || name == "upstream" || name == "keys") {
      continue;
    }
    if (node.is_table()) {
      std::string hint = closest_spelling(name, {"server", "upstream", "keys"});
      report(key.source(), hint.empty() ? fmt::format("unknown table [{}]; the file has [server], "
                                                      "[upstream] and [[keys]]",
                                                      name)
                                        : fmt::format("unknown table [{}]; did you mean [{}]?", name, hint));
    } else if (std::string places = sections_holding(name); !places.empty()) {
      report(key.source(), fmt::format("\"{}\" is outside any table; move it into {}", name, places));
    } else {
      report(key.source(), fmt::format("unknown setting \"{}\"; the file has [server], [upstream] "
                                       "and [[keys]] tables",
                                       name));
    }
  }
}

const toml::table* PoolReader::section_table(const toml::table& root, std::string_view name) {
  const toml::node* node = root.get(name);
  if (node == nullptr) {
    return nullptr;
  }
  if (!node->is_table()) {
    report(node->source(),
           fmt::format("\"{}\" must be a table written [{}], not {}", name, name, describe_node_type(*node)));
    return nullptr;
  }
  return node->as_table();
}

void PoolReader::read_settings(Section section, const toml::table& table, SettingTarget target,
                               const std::string& context) {
  for (auto&& [key, node] : table) {
    const Setting* setting = find_setting(section, key.str());
    if (setting == nullptr) {
      report_unknown(section, key, context);
      continue;
    }
    Decoded decoded = decode_setting(*setting, node, m_base_dir);
    if (!decoded.value) {
      report(node.source(), fmt::format("{}: \"{}\" {}", context, setting->name, decoded.error));
      continue;
    }
    setting->apply(target, std::move(*decoded.value));
  }
}

void PoolReader::report_unknown(Section section, const toml::key& key, const std::string& context) {
  std::vector<std::string_view> names;
  for (const Setting& setting : settings_table()) {
    if (setting.section == section) {
      names.push_back(setting.name);
    }
  }
  std::string message = fmt::format("{}: unknown setting \"{}\"", context, key.str());
  if (std::string hint = closest_spelling(key.str(), names); !hint.empty()) {
    message += fmt::format("; did you mean \"{}\"?", hint);
  } else if (std::string places = sections_holding(key.str()); !places.empty()) {
    message += fmt::format("; it belongs in {}", places);
  } else {
    message += "; keys.example.toml lists every setting";
  }
  report(key.source(), std::move(message));
}

std::optional<ReadKey> PoolReader::read_key(const toml::table& table, std::size_t index) {
  std::string context = fmt::format("keys[{}]", index + 1);
  KeyEntry entry;
  read_settings(Section::key, table, {nullptr, nullptr, &entry}, context);

  std::string source;
  std::optional<util::Secret> secret = resolve_secret(table, entry, context, source);
  if (!secret) {
    return std::nullopt;
  }
  ReadKey read;
  read.label_at = table.get("label") ? table.get("label")->source() : table.source();
  read.entry_at = table.source();
  read.context = context;
  read.key.label = entry.label.value_or(secret->fingerprint());
  read.key.secret = std::move(*secret);
  read.key.base_url = entry.base_url.value_or(m_config.upstream.base_url);
  read.key.auth = entry.auth.value_or(m_config.upstream.auth);
  read.key.ca_file = entry.ca_file ? entry.ca_file : m_config.upstream.ca_file;
  // status, reload and env skip secrets and run in the user's shell, whose
  // proxy variables are not the server's: they read the file's setting only.
  ProxyChoice proxy = choose_proxy(read.key.base_url, m_config.upstream.proxy,
                                   m_secrets == SecretResolution::resolve ? process_env() : EnvLookup{});
  read.key.proxy = std::move(proxy.proxy);
  if (!proxy.problem.empty() && std::none_of(m_problems.begin(), m_problems.end(), [&](const Problem& p) {
        return p.message == proxy.problem; // once, though every key of the pool shares it
      })) {
    report(std::move(proxy.problem));
  }
  read.key.source = std::move(source);
  return read;
}

std::optional<util::Secret> PoolReader::resolve_secret(const toml::table& table, KeyEntry& entry,
                                                       const std::string& context, std::string& source) {
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

std::vector<Problem> PoolReader::sorted_problems() {
  std::stable_sort(m_problems.begin(), m_problems.end(), [](const Problem& a, const Problem& b) {
    int a_line = a.line == 0 ? INT_MAX : a.line;
    int b_line = b.line == 0 ? INT_MAX : b.line;
    return a_line != b_line ? a_line < b_line : a.column < b.column;
  });
  return m_problems;
}

} // namespace

LoadResult load_pool_text(const std::string& text, const std::string& path, SecretResolution secrets) {
  // Before toml++, which recurses per nesting level without a bound: a
  // hostile header crashed `check` and, on SIGHUP, a running serve.
  if (std::optional<NestingProblem> deep = find_deep_nesting(text)) {
    return {std::nullopt, {{path, deep->line, deep->column, std::move(deep->message)}}};
  }
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    return {std::nullopt,
            {{path, static_cast<int>(at.line), static_cast<int>(at.column),
              "invalid TOML: " + lowercase_first(std::string(error.description()))}}};
  }
  return PoolReader(path, secrets).read(root);
}

LoadResult load_pool_file(const std::string& path, SecretResolution secrets) {
  FileRead read = read_private_file(path);
  if (!read.text) {
    return {std::nullopt, {{path, 0, 0, read.problem}}};
  }
  return load_pool_text(*read.text, path, secrets);
}

} // namespace keyshim::config
