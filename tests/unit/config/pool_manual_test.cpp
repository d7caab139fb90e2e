// keyshim-pool(5) is written from the settings table: every setting is there
// with its default and reload behaviour, and its example is a valid file.
#include "config/loader.hpp"
#include "config/pool_manual.hpp"
#include "config/settings_reference.hpp"
#include "config/settings_table.hpp"
#include "util/roff.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace keyshim::config {
namespace {

// The page's text for one setting: from its tag to the next tagged paragraph.
std::string entry_of(const std::string& page, const Setting& setting) {
  std::string heading = setting.section == Section::server     ? ".SS \"[server]\""
                        : setting.section == Section::upstream ? ".SS \"[upstream] and [pools.NAME]\""
                                                               : ".SS \"[[keys]] and [[pools.NAME.keys]]\"";
  std::size_t section = page.find(heading);
  if (section == std::string::npos) {
    return "";
  }
  std::size_t at = page.find(".TP\n" + util::roff::bold(setting.name) + "\n", section);
  if (at == std::string::npos) {
    return "";
  }
  return page.substr(at, page.find(".TP\n", at + 1) - at);
}

TEST(PoolManual, EverySettingAppearsInItsSectionWithTypeDefaultAndReload) {
  std::string page = pool_manual_roff("1.2.3");
  for (const Setting& setting : settings_table()) {
    std::string entry = entry_of(page, setting);
    SCOPED_TRACE(fmt::format("[{}] {}", to_string(setting.section), setting.name));
    ASSERT_FALSE(entry.empty()) << page;
    EXPECT_NE(entry.find(util::roff::escape(util::roff::sentence(setting.doc))), std::string::npos) << entry;
    EXPECT_NE(entry.find("Type: " + util::roff::escape(setting_type_text(setting))), std::string::npos)
        << entry;
    std::string default_text =
        setting.default_text.empty() ? "Default: none" : "Default: " + util::roff::bold(setting.default_text);
    EXPECT_NE(entry.find(default_text), std::string::npos) << entry;
    EXPECT_NE(entry.find(setting.reloadable ? "A reload applies a change" : "A change takes a restart"),
              std::string::npos)
        << entry;
  }
}

TEST(PoolManual, HeaderCarriesTheVersionAndTheSectionsAreThere) {
  std::string page = pool_manual_roff("1.2.3");
  EXPECT_NE(page.find(".TH \"KEYSHIM\\-POOL\" 5 \"\" \"keyshim 1.2.3\""), std::string::npos);
  for (const char* section : {"NAME", "SYNOPSIS", "DESCRIPTION", "POOLS", "KEYS", "SETTINGS", "PERMISSIONS",
                              "EXAMPLE", "SEE ALSO"}) {
    EXPECT_NE(page.find(fmt::format(".SH \"{}\"\n", section)), std::string::npos) << section;
  }
}

TEST(PoolManual, NamesEveryReservedPoolName) {
  std::string page = pool_manual_roff("1");
  for (std::string_view name : k_reserved_pool_names) {
    EXPECT_NE(page.find(util::roff::bold(name)), std::string::npos) << name;
  }
}

TEST(PoolManual, ExampleIsAValidPoolFileWithTwoPools) {
  LoadResult loaded =
      load_pool_text(std::string(pool_manual_example()), "example.toml", SecretResolution::skip);
  ASSERT_TRUE(loaded.ok()) << loaded.problems_text();
  ASSERT_EQ(loaded.config->pools.size(), 2u);
  EXPECT_NE(loaded.config->find_pool("openai"), nullptr);
  EXPECT_NE(loaded.config->find_pool("anthropic"), nullptr);
  EXPECT_NE(pool_manual_roff("1").find(util::roff::escape(pool_manual_example())), std::string::npos);
}

} // namespace
} // namespace keyshim::config
