// Each tests/data/config/bad/NAME.toml is loaded as "keys.toml"; the messages
// must equal NAME.expected line for line. To add a case, write the .toml, run
// this suite with KEYSHIM_UPDATE_GOLDENS=1 (which writes the .expected files),
// and review every new or changed line before keeping it.
#include "config/loader.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace keyshim::config;
namespace fs = std::filesystem;

namespace {

const fs::path k_bad_dir = fs::path(KEYSHIM_TEST_DATA_DIR) / "config" / "bad";

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(k_bad_dir)) {
    if (entry.path().extension() == ".toml") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class BadConfigGolden : public testing::TestWithParam<std::string> {};

} // namespace

TEST_P(BadConfigGolden, ReportsExactlyTheExpectedMessages) {
  // Variables the goldens name must be unset whatever the environment holds.
  ::unsetenv("KEYSHIM_GOLDEN_UNSET");
  ::setenv("KEYSHIM_GOLDEN_EMPTY", "", 1);
  fs::path toml = k_bad_dir / (GetParam() + ".toml");
  fs::path expected = k_bad_dir / (GetParam() + ".expected");
  LoadResult result = load_pool_text(keyshim::test::read_file(toml.string()), "keys.toml");
  if (const char* update = std::getenv("KEYSHIM_UPDATE_GOLDENS"); update && *update == '1') {
    std::ofstream(expected, std::ios::binary | std::ios::trunc) << result.problems_text();
  }
  ASSERT_TRUE(fs::exists(expected)) << "missing " << expected;
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.problems_text(), keyshim::test::read_file(expected.string()));
  EXPECT_EQ(result.problems_text().find("SECRET"), std::string::npos)
      << "goldens mark key material with SECRET; it must never be printed";
}

TEST(BadConfigGoldens, ThereAreEnoughOfThem) {
  EXPECT_GE(golden_names().size(), 12u);
}

namespace {

std::string test_name(const testing::TestParamInfo<std::string>& param_info) {
  std::string name = param_info.param;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Files, BadConfigGolden, testing::ValuesIn(golden_names()), test_name);
