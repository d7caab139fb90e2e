// The README's pool-file reference is generated from the settings table.
// Run with KEYSHIM_UPDATE_README=1 to rewrite it after changing the table.
#include "config/settings_reference.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace keyshim::config {
namespace {

constexpr const char* k_begin =
    "<!-- settings-reference:begin (generated from src/config/settings_table.cpp) -->\n";
constexpr const char* k_end = "<!-- settings-reference:end -->";

TEST(SettingsReference, ReadmeMatchesTheSettingsTable) {
  std::string path = std::string(KEYSHIM_SOURCE_DIR) + "/README.md";
  std::string readme = test::read_file(path);
  std::size_t begin = readme.find(k_begin);
  std::size_t end = readme.find(k_end);
  ASSERT_NE(begin, std::string::npos) << "README.md lacks the settings reference markers";
  ASSERT_NE(end, std::string::npos);
  begin += std::string(k_begin).size();
  std::string expected = settings_reference_markdown();
  if (std::getenv("KEYSHIM_UPDATE_README") != nullptr) {
    readme.replace(begin, end - begin, expected);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << readme;
  }
  EXPECT_EQ(readme.substr(begin, end - begin), expected);
}

} // namespace
} // namespace keyshim::config
