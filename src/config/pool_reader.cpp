#include "config/pool_reader.hpp"

#include "config/decode.hpp"
#include "config/pool_name.hpp"
#include "config/spelling.hpp"
#include "config/text_helpers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace keyshim::config {
namespace {

// "[server]", "[upstream] or a [[keys]] entry": where a setting name is valid.
std::string sections_holding(std::string_view name) {
  std::vector<std::string> places;
  for (const Setting& setting : settings_table()) {
    if (setting.name == name) {
      places.push_back(setting.section == Section::key ? "a [[keys]] entry"
                       : setting.section == Section::upstream
                           ? "[upstream] (or a [pools.NAME] table)"
                           : fmt::format("[{}]", to_string(setting.section)));
    }
  }
  std::string out;
  for (std::size_t i = 0; i < places.size(); ++i) {
    out += (i == 0 ? "" : " or ") + places[i];
  }
  return out;
}

} // namespace

LoadResult PoolReader::read(const toml::table& root) {
  m_config.path = m_file;
  read_top_level_names(root);
  if (const toml::table* server = section_table(root, "server")) {
    read_settings(Section::server, *server, {&m_config.server, nullptr, nullptr}, "server");
  }
  // The top-level [upstream] and [[keys]] are the default pool, served at
  // "/": every file written before pools existed means what it meant.
  const toml::node* pools = root.get("pools");
  m_named_pools = pools != nullptr;
  if (root.contains("upstream") || root.contains("keys") || pools == nullptr) {
    PoolConfig pool;
    pool.name = std::string(k_default_pool_name);
    read_pool(std::move(pool), section_table(root, "upstream"), root.get("keys"), "",
              root.get("upstream") ? root.get("upstream")->source() : root.source());
  }
  if (pools != nullptr) {
    read_named_pools(*pools);
  }
  if (!m_problems.empty()) {
    return {std::nullopt, sorted_problems()};
  }
  return {std::move(m_config), {}};
}

// [pools.NAME] tables, each with its upstream settings and [[pools.NAME.keys]].
void PoolReader::read_named_pools(const toml::node& node) {
  const toml::table* pools = node.as_table();
  if (pools == nullptr || pools->empty()) {
    report(node.source(), "\"pools\" must hold [pools.NAME] tables, one per upstream API, e.g. "
                          "[pools.anthropic]");
    return;
  }
  for (auto&& [key, value] : *pools) {
    std::string name(key.str());
    std::string context = "pools." + name;
    if (std::string problem = pool_name_problem(name); !problem.empty()) {
      report(key.source(), fmt::format("[{}]: {}", context, problem));
      continue;
    }
    if (!value.is_table()) {
      report(value.source(), fmt::format("\"{}\" must be a table written [{}], not {}", context, context,
                                         describe_node_type(value)));
      continue;
    }
    const toml::table& table = *value.as_table();
    PoolConfig pool;
    pool.name = name;
    read_pool(std::move(pool), &table, table.get("keys"), context, key.source());
  }
}

// One pool: its settings over the built-in defaults (a named pool does not
// inherit [upstream]: that is the default pool's own), then its keys.
void PoolReader::read_pool(PoolConfig pool, const toml::table* settings, const toml::node* keys,
                           const std::string& context, const toml::source_region& where) {
  std::string keys_context = context.empty() ? "keys" : context + ".keys";
  if (settings != nullptr) {
    read_settings(Section::upstream, *settings, {nullptr, &pool.upstream, nullptr},
                  context.empty() ? "upstream" : context, context.empty() ? "" : "keys");
  }
  std::vector<ReadKey> read;
  if (keys != nullptr) {
    read = read_keys(*keys, pool.upstream, keys_context);
  }
  if (keys == nullptr || (keys->as_array() != nullptr && keys->as_array()->empty())) {
    if (context.empty() && !m_named_pools) {
      report("no keys: add a [[keys]] entry");
    } else if (context.empty()) {
      report(where, "[upstream] sets up the default pool, which has no [[keys]]; add [[keys]] entries or "
                    "move these settings into a [pools.NAME] table");
    } else {
      report(where, fmt::format("[{}] has no keys: add a [[{}]] entry", context, keys_context));
    }
  }
  check_duplicates(read);
  for (ReadKey& key : read) {
    pool.keys.push_back(std::move(key.key));
  }
  m_config.pools.push_back(std::move(pool));
}

void PoolReader::read_top_level_names(const toml::table& root) {
  for (auto&& [key, node] : root) {
    std::string_view name = key.str();
    if (name == "server" || name == "upstream" || name == "keys" || name == "pools") {
      continue;
    }
    if (node.is_table()) {
      std::string hint = closest_spelling(name, {"server", "upstream", "keys", "pools"});
      report(key.source(), hint.empty() ? fmt::format("unknown table [{}]; the file has [server], "
                                                      "[upstream], [[keys]] and [pools.NAME]",
                                                      name)
                                        : fmt::format("unknown table [{}]; did you mean [{}]?", name, hint));
    } else if (std::string places = sections_holding(name); !places.empty()) {
      report(key.source(), fmt::format("\"{}\" is outside any table; move it into {}", name, places));
    } else {
      report(key.source(), fmt::format("unknown setting \"{}\"; the file has [server], [upstream], "
                                       "[[keys]] and [pools.NAME] tables",
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
                               const std::string& context, std::string_view skip) {
  for (auto&& [key, node] : table) {
    if (!skip.empty() && key.str() == skip) {
      continue;
    }
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

std::vector<Problem> PoolReader::sorted_problems() {
  std::stable_sort(m_problems.begin(), m_problems.end(), [](const Problem& a, const Problem& b) {
    int a_line = a.line == 0 ? INT_MAX : a.line;
    int b_line = b.line == 0 ? INT_MAX : b.line;
    return a_line != b_line ? a_line < b_line : a.column < b.column;
  });
  return m_problems;
}

} // namespace keyshim::config
