// The built man pages render without a warning, and the completions are
// valid scripts that, run by their shell, offer what keyshim accepts.
#include "docs_support.hpp"

#include "support/run_binary.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace keyshim::test {
namespace {

std::set<std::string> lines_of(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.insert(line);
  }
  return lines;
}

// The candidates bash's completion offers for `words`, the last being the
// word under the cursor.
std::set<std::string> bash_candidates(const std::vector<std::string>& words) {
  std::string script = "source \"$0\"\nCOMP_WORDS=(";
  for (const std::string& word : words) {
    script += " '" + word + "'";
  }
  script += " )\nCOMP_CWORD=" + std::to_string(words.size() - 1) +
            "\n_keyshim\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
  RunResult result =
      run_binary({"bash", "--norc", "--noprofile", "-c", script, built_doc_path("keyshim.bash")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::set<std::string> candidates = lines_of(result.out);
  candidates.erase("");
  return candidates;
}

void expect_renders_cleanly(const std::string& page) {
  if (!have_program("groff")) {
    GTEST_SKIP() << "groff is not installed (tools/install-deps installs groff-base)";
  }
  RunResult result = run_binary({"groff", "-man", "-Tutf8", "-ww", "-z", built_doc_path(page)});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.err, "") << page;
  RunResult text = run_binary({"groff", "-man", "-Tascii", "-P-cbou", built_doc_path(page)});
  EXPECT_NE(text.out.find("NAME"), std::string::npos) << text.out;
}

TEST(DocsShell, ManPageRendersWithoutWarnings) {
  expect_renders_cleanly("keyshim.1");
}

TEST(DocsShell, PoolManPageRendersWithoutWarnings) {
  expect_renders_cleanly("keyshim-pool.5");
}

TEST(DocsShell, BashCompletionCompletesSubcommandNames) {
  EXPECT_EQ(bash_candidates({"keyshim", "se"}), (std::set<std::string>{"serve", "service"}));
  EXPECT_EQ(bash_candidates({"keyshim", "service", ""}),
            (std::set<std::string>{"install", "uninstall", "status"}));
}

TEST(DocsShell, BashCompletionOffersEachCommandsOwnOptions) {
  for (const CliCommand& command : cli_commands()) {
    std::vector<std::string> words = {"keyshim"};
    words.insert(words.end(), command.path.begin(), command.path.end());
    words.emplace_back("-");
    std::set<std::string> expected(command.option_names.begin(), command.option_names.end());
    EXPECT_EQ(bash_candidates(words), expected) << path_text(command);
  }
  std::set<std::string> serve_long = bash_candidates({"keyshim", "serve", "--"});
  EXPECT_EQ(serve_long, (std::set<std::string>{"--help", "--config", "--listen", "--log-format", "--verbose",
                                               "--quiet"}));
}

TEST(DocsShell, BashCompletionOffersAnOptionsAllowedValues) {
  EXPECT_EQ(bash_candidates({"keyshim", "serve", "--log-format", ""}),
            (std::set<std::string>{"text", "json"}));
  EXPECT_EQ(bash_candidates({"keyshim", "env", "--shell", "f"}), (std::set<std::string>{"fish"}));
  EXPECT_EQ(bash_candidates({"keyshim", "serve", "--log-format", "=", "j"}), (std::set<std::string>{"json"}));
  EXPECT_TRUE(bash_candidates({"keyshim", "serve", "--listen", ""}).empty());
}

TEST(DocsShell, BashCompletionOffersFilesForTheConfigOption) {
  std::set<std::string> files =
      bash_candidates({"keyshim", "check", "-c", std::string(KEYSHIM_SOURCE_DIR) + "/READ"});
  EXPECT_EQ(files, (std::set<std::string>{std::string(KEYSHIM_SOURCE_DIR) + "/README.md"}));
}

TEST(DocsShell, BashCompletionOffersCommandsAfterRunDashDash) {
  std::set<std::string> commands = bash_candidates({"keyshim", "run", "--", "bas"});
  EXPECT_TRUE(commands.count("bash")) << "bash is on PATH, so `keyshim run -- bas` offers it";
  EXPECT_FALSE(commands.count("--config"));
}

TEST(DocsShell, CompletionScriptsAreValidForTheirShells) {
  RunResult bash = run_binary({"bash", "-n", built_doc_path("keyshim.bash")});
  EXPECT_EQ(bash.exit_code, 0) << bash.err;
  if (have_program("zsh")) {
    RunResult zsh = run_binary({"zsh", "-n", built_doc_path("_keyshim")});
    EXPECT_EQ(zsh.exit_code, 0) << zsh.err;
  }
  if (have_program("fish")) {
    RunResult fish = run_binary({"fish", "--no-execute", built_doc_path("keyshim.fish")});
    EXPECT_EQ(fish.exit_code, 0) << fish.err;
  }
}

TEST(DocsShell, FishCompletionCompletesSubcommandsAndOptions) {
  if (!have_program("fish")) {
    GTEST_SKIP() << "fish is not installed; its completion's content is checked by DocsContent";
  }
  auto complete = [](const std::string& line) {
    std::string script = "source $argv[1]; complete -C '" + line + "'";
    RunOptions options;
    options.env = {
        {"HOME", "/nonexistent"}, {"XDG_CONFIG_HOME", "/nonexistent"}, {"XDG_DATA_HOME", "/nonexistent"}};
    RunResult result =
        run_binary({"fish", "--no-config", "-c", script, built_doc_path("keyshim.fish")}, options);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::set<std::string> names;
    for (const std::string& entry : lines_of(result.out)) {
      names.insert(entry.substr(0, entry.find('\t')));
    }
    names.erase("");
    return names;
  };
  EXPECT_EQ(complete("keyshim se"), (std::set<std::string>{"serve", "service"}));
  EXPECT_EQ(complete("keyshim service "), (std::set<std::string>{"install", "uninstall", "status"}));
  EXPECT_EQ(complete("keyshim serve --log-format "), (std::set<std::string>{"text", "json"}));
  std::set<std::string> status = complete("keyshim status --");
  EXPECT_TRUE(status.count("--json"));
  EXPECT_FALSE(status.count("--log-format")) << "serve's option offered to status";
}

} // namespace
} // namespace keyshim::test
