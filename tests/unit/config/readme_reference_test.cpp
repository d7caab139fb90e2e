// The pool-file reference in the README and in docs/pool-file.md is generated
// from the settings table. Run with KEYSHIM_UPDATE_README=1 to rewrite both
// after changing the table.
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

// The text between the markers of the file at `relative` (to the source
// tree) equals the generated reference; rewritten first when asked to.
void expect_generated_reference(const std::string& relative) {
  std::string path = std::string(KEYSHIM_SOURCE_DIR) + "/" + relative;
  std::string text = test::read_file(path);
  std::size_t begin = text.find(k_begin);
  std::size_t end = text.find(k_end);
  ASSERT_NE(begin, std::string::npos) << relative << " lacks the settings reference markers";
  ASSERT_NE(end, std::string::npos) << relative << " lacks the settings reference end marker";
  begin += std::string(k_begin).size();
  std::string expected = settings_reference_markdown();
  if (std::getenv("KEYSHIM_UPDATE_README") != nullptr) {
    text.replace(begin, end - begin, expected);
    end = begin + expected.size();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  EXPECT_EQ(text.substr(begin, end - begin), expected) << relative << " is out of date: run this test with "
                                                       << "KEYSHIM_UPDATE_README=1";
}

TEST(SettingsReference, ReadmeMatchesTheSettingsTable) {
  expect_generated_reference("README.md");
}

TEST(SettingsReference, PoolFileDocMatchesTheSettingsTable) {
  expect_generated_reference("docs/pool-file.md");
}

} // namespace
} // namespace keyshim::config
