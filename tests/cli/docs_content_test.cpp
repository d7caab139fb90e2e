// Every subcommand and every option of the command line appears, under its
// own command, in the built man page and in each of the three completions.
// The expectations come from the CLI11 app, not from the generator.
#include "docs_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace keyshim::test {
namespace {

std::string roff_escaped(std::string text) {
  std::string out;
  for (char c : text) {
    out += c == '-' ? std::string("\\-") : std::string(1, c);
  }
  return out;
}

// `text` from `start` to the next line starting with one of `ends` (or its end).
std::string block(const std::string& text, const std::string& start, const std::vector<std::string>& ends) {
  std::size_t at = text.find(start);
  if (at == std::string::npos) {
    return "";
  }
  std::size_t end = std::string::npos;
  for (const std::string& marker : ends) {
    end = std::min(end, text.find("\n" + marker, at + start.size()));
  }
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// `token` in `text` with one of `before` right before it and one of `after` right after.
bool has_token(const std::string& text, const std::string& token, const std::string& before,
               const std::string& after) {
  for (std::size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + 1)) {
    bool starts = at > 0 && before.find(text[at - 1]) != std::string::npos;
    std::size_t end = at + token.size();
    bool ends = end < text.size() && after.find(text[end]) != std::string::npos;
    if (starts && ends) {
      return true;
    }
  }
  return false;
}

TEST(DocsContent, ManPageDocumentsEveryCommandAndItsOptionsInItsOwnSection) {
  std::string page = built_doc("keyshim.1");
  ASSERT_FALSE(page.empty()) << built_doc_path("keyshim.1");
  for (const CliCommand& command : cli_commands()) {
    std::string heading = command.path.empty() ? ".SH \"OPTIONS\"\n"
                                               : ".SS \"keyshim " + roff_escaped(path_text(command)) + "\"\n";
    std::string section = block(page, heading, {".SS", ".SH"});
    ASSERT_FALSE(section.empty()) << "no section " << heading;
    for (const std::string& name : command.option_names) {
      bool is_help = std::count(command.help_names.begin(), command.help_names.end(), name) > 0;
      if (is_help && !command.path.empty()) {
        continue; // every command's -h/--help is documented once, under OPTIONS
      }
      EXPECT_TRUE(has_token(section, "\\fB" + roff_escaped(name) + "\\fR", " [\n,", " ,]\n|"))
          << name << " missing in\n"
          << section;
    }
  }
}

TEST(DocsContent, ZshCompletionHasAFunctionPerCommandWithItsOptionsAndSubcommands) {
  std::string script = built_doc("_keyshim");
  ASSERT_EQ(script.rfind("#compdef keyshim\n", 0), 0u);
  for (const CliCommand& command : cli_commands()) {
    std::string name = command.path.empty() ? "_keyshim" : "_keyshim_" + path_text(command, "_");
    std::string body = block(script, "\n" + name + "() {\n", {"}"});
    ASSERT_FALSE(body.empty()) << name;
    for (const std::string& option : command.option_names) {
      EXPECT_TRUE(has_token(body, option, "{,'", ",}'[")) << option << " missing in\n" << body;
    }
    for (const std::string& sub : command.subcommands) {
      EXPECT_TRUE(has_token(body, sub + ":", "'", "abcdefghijklmnopqrstuvwxyz ")) << sub << " in " << name;
      EXPECT_NE(body.find("'" + sub + "') " + name + "_" + sub + " ;;"), std::string::npos) << sub;
    }
  }
}

TEST(DocsContent, FishCompletionHasALinePerOptionAndSubcommandUnderItsCommand) {
  std::string script = built_doc("keyshim.fish");
  for (const CliCommand& command : cli_commands()) {
    std::string condition = "-n '__keyshim_at \\'" + path_text(command) + "\\''";
    std::vector<std::string> lines;
    for (std::size_t at = script.find(condition); at != std::string::npos;
         at = script.find(condition, at + 1)) {
      lines.push_back(script.substr(at, script.find('\n', at) - at));
    }
    ASSERT_FALSE(lines.empty()) << condition;
    auto has_line = [&lines](const std::string& needle) {
      return std::any_of(lines.begin(), lines.end(), [&needle](const std::string& line) {
        return line.find(needle) != std::string::npos;
      });
    };
    for (const std::string& option : command.option_names) {
      std::string flag =
          option.rfind("--", 0) == 0 ? " -l " + option.substr(2) + " " : " -s " + option.substr(1) + " ";
      EXPECT_TRUE(has_line(flag)) << option << " under " << condition;
    }
    for (const std::string& sub : command.subcommands) {
      EXPECT_TRUE(has_line(" -a '" + sub + "' ")) << sub << " under " << condition;
    }
  }
}

TEST(DocsContent, BashCompletionListsEveryCommandsOptionsAndSubcommands) {
  std::string script = built_doc("keyshim.bash");
  for (const CliCommand& command : cli_commands()) {
    std::string branch = block(script, "        '" + path_text(command, "/") + "')\n", {"            ;;"});
    ASSERT_FALSE(branch.empty()) << path_text(command);
    for (const std::string& option : command.option_names) {
      EXPECT_TRUE(has_token(branch, option, "' ", "' ")) << option << " missing in\n" << branch;
    }
    for (const std::string& sub : command.subcommands) {
      EXPECT_TRUE(has_token(branch, sub, "' ", "' ")) << sub << " missing in\n" << branch;
    }
  }
}

} // namespace
} // namespace keyshim::test
