// The nesting bound checked before toml++ parses a pool file: deep headers,
// dotted keys, arrays and inline tables are refused with a position, and
// ordinary files (strings and comments full of brackets and dots) pass.
#include "config/loader.hpp"
#include "config/nesting_limit.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;

namespace {

// "a.a.a...": `parts` dot-separated parts.
std::string dotted(int parts) {
  std::string out = "a";
  for (int i = 1; i < parts; ++i) {
    out += ".a";
  }
  return out;
}

std::string repeated(std::string_view piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) {
    out += piece;
  }
  return out;
}

std::string where(const std::optional<NestingProblem>& problem) {
  return problem ? std::to_string(problem->line) + ":" + std::to_string(problem->column) : "none";
}

constexpr const char* k_nesting_key = "[[keys]]\nkey = \"sk-nesting-test-1\"\n";

} // namespace

TEST(NestingLimit, OrdinaryPoolFilePasses) {
  EXPECT_FALSE(find_deep_nesting(R"(# a pool [not.a.header] "with quotes
[server]
listen = "127.0.0.1:8787"  # [a.b.c]
allowed_origins = ["http://localhost:3000", 'http://[::1]:3000']

[upstream]
max_cooldown = "1.5h"

[[keys]]
label = "team.one"
key_cmd = ["pass", "show", "a.b.c.d/e"]
"quoted.key".x = { y = [1.5, 2.5, { z = """a.b.c ["{" """ }] }
)"));
}

TEST(NestingLimit, DeepestAllowedNestingPasses) {
  EXPECT_FALSE(find_deep_nesting("[" + dotted(k_max_nesting) + "]\n"));
  EXPECT_FALSE(find_deep_nesting(dotted(k_max_nesting) + " = 1\n"));
  EXPECT_FALSE(
      find_deep_nesting("a = " + repeated("[", k_max_nesting - 1) + repeated("]", k_max_nesting - 1)));
}

TEST(NestingLimit, DeepTableHeaderIsRefusedAtItsBracket) {
  auto problem = find_deep_nesting("# pool\n\n[" + dotted(k_max_nesting + 1) + "]\n");
  ASSERT_TRUE(problem);
  EXPECT_EQ(where(problem), "3:1");
  EXPECT_EQ(
      problem->message,
      "table header nests deeper than 64 levels; pool files have only [server], [upstream] and [[keys]]");
  EXPECT_EQ(where(find_deep_nesting("[[" + dotted(k_max_nesting + 1) + "]]\n")), "1:1");
}

TEST(NestingLimit, DeepDottedKeyIsRefusedAtTheKey) {
  EXPECT_EQ(where(find_deep_nesting("[server]\n  " + dotted(k_max_nesting + 1) + " = 1\n")), "2:3");
  // The header's parts count too: the key sits below them.
  EXPECT_EQ(where(find_deep_nesting("[" + dotted(40) + "]\n" + dotted(30) + " = 1\n")), "2:1");
  // Quoted parts are parts; the dots inside them are not.
  EXPECT_EQ(where(find_deep_nesting(repeated("\"a\".", k_max_nesting) + "b = 1\n")), "1:1");
  EXPECT_FALSE(find_deep_nesting("\"" + dotted(1000) + "\" = 1\n"));
}

TEST(NestingLimit, DeepArraysAndInlineTablesAreRefusedAtTheFirstBracketTooDeep) {
  auto arrays = find_deep_nesting("a = " + repeated("[", 1000));
  ASSERT_TRUE(arrays);
  EXPECT_EQ(where(arrays), "1:" + std::to_string(4 + k_max_nesting));
  EXPECT_EQ(arrays->message,
            "value nests deeper than 64 levels; settings take a plain value or a list of strings");
  EXPECT_TRUE(find_deep_nesting("a = " + repeated("{b=", 1000)));
  EXPECT_TRUE(find_deep_nesting("a = " + repeated("[{b=", 500)));
  // Dotted keys inside inline tables add to the depth of the table they are in.
  EXPECT_TRUE(find_deep_nesting("a = " + repeated("{" + dotted(10) + "=", 10)));
}

TEST(NestingLimit, ClosedContainersGiveTheirDepthBack) {
  std::string flat;
  for (int i = 0; i < 1000; ++i) {
    flat += "k" + std::to_string(i) + " = [[1], {a = [2]}]\n";
  }
  EXPECT_FALSE(find_deep_nesting(flat));
  EXPECT_FALSE(find_deep_nesting("a = [\n" + repeated("  [1.5], # ]]]\n", 1000) + "]\n"));
}

TEST(NestingLimit, BracketsInStringsAndCommentsDoNotCount) {
  std::string brackets = repeated("[{", 1000);
  EXPECT_FALSE(find_deep_nesting("a = \"" + brackets + "\"\n"));
  EXPECT_FALSE(find_deep_nesting("a = '" + brackets + "'\n"));
  EXPECT_FALSE(find_deep_nesting("a = \"\"\"\n" + brackets + "\n\"\"\"\n"));
  EXPECT_FALSE(find_deep_nesting("a = '''\n" + brackets + "\n'''\n"));
  EXPECT_FALSE(find_deep_nesting("a = \"escaped \\\" " + brackets + "\"\n"));
  EXPECT_FALSE(find_deep_nesting("# " + brackets + "\n"));
  // The closing quotes of a multi-line string may carry two more; scanning goes on after them.
  EXPECT_TRUE(find_deep_nesting("a = \"\"\"x\"\"\"\"\"\nb = " + repeated("[", 1000) + "\n"));
}

// issue 9: toml++ recursed once per part and overflowed the stack.
TEST(NestingLimit, FiftyThousandPartHeaderIsRefusedByTheLoaderInsteadOfCrashing) {
  keyshim::test::TempDir temp;
  std::string path =
      temp.write("keys.toml", std::string(k_nesting_key) + "[" + dotted(50'000) + "]\nx = 1\n");
  LoadResult result = load_pool_file(path);
  EXPECT_FALSE(result.ok());
  ASSERT_EQ(result.problems.size(), 1u) << result.problems_text().substr(0, 500);
  EXPECT_EQ(result.problems[0].text(), path + ":3:1: table header nests deeper than 64 levels; pool files "
                                              "have only [server], [upstream] and [[keys]]");
}

TEST(NestingLimit, DeepValuesAndKeysAreRefusedByTheLoaderInsteadOfCrashing) {
  for (const std::string& deep : {dotted(50'000) + " = 1\n", "a = " + repeated("[", 50'000),
                                  "a = " + repeated("{a=", 50'000), "a = {" + dotted(50'000) + " = 1}\n"}) {
    LoadResult result = load_pool_text(std::string(k_nesting_key) + deep, "keys.toml");
    EXPECT_FALSE(result.ok());
    ASSERT_EQ(result.problems.size(), 1u) << result.problems_text().substr(0, 500);
    EXPECT_EQ(result.problems[0].text().rfind("keys.toml:3:", 0), 0u) << result.problems[0].text();
  }
}
