#include "config/loader.hpp"
#include "config/settings_table.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

using namespace keyshim::config;

namespace {

const std::string k_example_path = std::string(KEYSHIM_SOURCE_DIR) + "/keys.example.toml";

// Every [server] and [upstream] value, printed, so two Configs can be compared.
std::string describe_sections(const Config& config) {
  const ServerSettings& s = config.server;
  const UpstreamSettings& u = config.pools.at(0).upstream;
  return fmt::format("{} {} {} {} {} {} {} {} | {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                     s.listen.text(), s.client_token.has_value(), fmt::join(s.allowed_origins, ","),
                     s.max_request_body, s.drain_timeout.count(), s.state, s.capture_size,
                     s.capture_body_limit, u.base_url.text(), u.auth.text(), to_string(u.strategy),
                     u.max_attempts, u.connect_timeout.count(), u.first_byte_timeout.count(),
                     u.idle_timeout.count(), u.max_cooldown.count(), u.ca_file.value_or("-"),
                     u.max_wait.count(), u.max_concurrent.value_or(0), u.session_ttl.count(), u.day_start,
                     u.day_zone.text(), to_string(u.capture));
}

} // namespace

TEST(SettingsTable, NamesAreUniqueWithinEachSection) {
  std::set<std::pair<Section, std::string_view>> seen;
  for (const Setting& setting : settings_table()) {
    EXPECT_TRUE(seen.insert({setting.section, setting.name}).second) << setting.name;
  }
}

TEST(SettingsTable, EverySettingIsDocumentedAndStorable) {
  for (const Setting& setting : settings_table()) {
    EXPECT_FALSE(setting.doc.empty()) << setting.name;
    EXPECT_NE(setting.apply, nullptr) << setting.name;
    EXPECT_EQ(find_setting(setting.section, setting.name), &setting);
  }
}

TEST(SettingsTable, OnlyTheListenAddressNeedsARestart) {
  for (const Setting& setting : settings_table()) {
    EXPECT_EQ(setting.reloadable, setting.name != "listen") << setting.name;
  }
}

TEST(SettingsTable, DocumentedDefaultsMatchTheStructDefaults) {
  const std::string key = "[[keys]]\nkey = 'sk-defaults'\n";
  std::string expected = describe_sections(*load_pool_text(key, "keys.toml").config);
  for (const Setting& setting : settings_table()) {
    if (setting.default_text.empty() || setting.section == Section::key) {
      continue;
    }
    std::string text =
        fmt::format("[{}]\n{} = {}\n{}", to_string(setting.section), setting.name, setting.default_text, key);
    LoadResult result = load_pool_text(text, "keys.toml");
    ASSERT_TRUE(result.ok()) << setting.name << ": " << result.problems_text();
    EXPECT_EQ(describe_sections(*result.config), expected) << setting.name;
  }
}

TEST(ExampleFile, MentionsEverySetting) {
  std::string text = keyshim::test::read_file(k_example_path);
  ASSERT_FALSE(text.empty()) << k_example_path;
  for (const Setting& setting : settings_table()) {
    // Written either live ("name = ") or commented out ("# name = ").
    std::string needle = fmt::format("\n{} = ", setting.name);
    std::string commented = fmt::format("# {} = ", setting.name);
    EXPECT_TRUE(text.find(needle) != std::string::npos || text.find(commented) != std::string::npos)
        << "keys.example.toml does not show " << setting.name;
  }
}

// As shipped means with nothing set up first: no variable, no command.
TEST(ExampleFile, PassesValidationAsShipped) {
  ::unsetenv("KEYSHIM_EXAMPLE_TEAM_KEY"); // the variable the file once needed
  LoadResult result = load_pool_text(keyshim::test::read_file(k_example_path), k_example_path);
  ASSERT_TRUE(result.ok()) << result.problems_text();
  ASSERT_EQ(result.config->pools.size(), 3u);
  EXPECT_EQ(result.config->pools.at(0).keys.size(), 3u);
  EXPECT_EQ(result.config->key_count(), 5u);
}
