// The binary's own contract: --version, --help and usage errors (exit 2).
#include "support/run_binary.hpp"

#include <gtest/gtest.h>

using keyshim::test::run_binary;
using keyshim::test::RunResult;

TEST(CliBasics, VersionPrintsTheVersionAndExitsZero) {
  RunResult result = run_binary({KEYSHIM_BINARY, "--version"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out.rfind("keyshim 0.", 0), 0u) << result.out;
}

TEST(CliBasics, HelpListsSubcommandsAndExitCodes) {
  RunResult result = run_binary({KEYSHIM_BINARY, "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("check"), std::string::npos);
  EXPECT_NE(result.out.find("init"), std::string::npos);
  EXPECT_NE(result.out.find("Exit codes"), std::string::npos);
}

TEST(CliBasics, MissingSubcommandIsAUsageError) {
  EXPECT_EQ(run_binary({KEYSHIM_BINARY}).exit_code, 2);
}

TEST(CliBasics, UnknownSubcommandIsAUsageError) {
  EXPECT_EQ(run_binary({KEYSHIM_BINARY, "frobnicate"}).exit_code, 2);
}

TEST(CliBasics, UnknownOptionIsAUsageError) {
  RunResult result = run_binary({KEYSHIM_BINARY, "check", "--no-such-option"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_FALSE(result.err.empty());
}

TEST(CliBasics, ConfigOptionWithoutValueIsAUsageError) {
  EXPECT_EQ(run_binary({KEYSHIM_BINARY, "check", "-c"}).exit_code, 2);
}
