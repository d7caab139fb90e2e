#pragma once
// The pool file reader behind load_pool_text: one parsed document to a
// Config, every problem collected with its position. Internal to config/.
#include "config/loader.hpp"
#include "config/secret_source.hpp"
#include "config/settings_table.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::config {

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
  void read_named_pools(const toml::node& node);
  void read_pool(PoolConfig pool, const toml::table* settings, const toml::node* keys,
                 const std::string& context, const toml::source_region& where);
  const toml::table* section_table(const toml::table& root, std::string_view name);
  void read_settings(Section section, const toml::table& table, SettingTarget target,
                     const std::string& context, std::string_view skip = {});
  void report_unknown(Section section, const toml::key& key, const std::string& context);
  std::vector<ReadKey> read_keys(const toml::node& node, const UpstreamSettings& pool,
                                 const std::string& context);
  std::optional<ReadKey> read_key(const toml::table& table, const UpstreamSettings& pool,
                                  std::string context);
  std::optional<util::Secret> resolve_secret(const toml::table& table, KeyEntry& entry,
                                             const std::string& context, std::string& source,
                                             std::optional<util::TimePoint>& expires);
  void check_duplicates(const std::vector<ReadKey>& keys);
  std::vector<Problem> sorted_problems();

  std::string m_file;
  std::string m_base_dir;
  SecretResolution m_secrets;
  Config m_config;
  bool m_named_pools = false;
  std::vector<Problem> m_problems;
};

} // namespace keyshim::config
