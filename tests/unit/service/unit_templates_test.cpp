#include "service/command_runner.hpp"
#include "service/unit_templates.hpp"
#include "support/temp_dir.hpp"
#include "xml_check.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace keyshim;
using keyshim::test::TempDir;

namespace {

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(prefix)) {
      found.push_back(line);
    }
  }
  return found;
}

bool have_program(const char* name) {
  return service::run_command_captured({"sh", "-c", std::string("command -v ") + name}).ok();
}

// A stand-in for the keyshim binary: systemd-analyze verify checks that
// ExecStart= names an executable file.
std::string make_executable(const TempDir& dir, const std::string& name) {
  return dir.write(name, "#!/bin/sh\nexit 0\n", 0755);
}

// `systemd-analyze --user verify` needs a runtime directory even when no user
// manager runs (CI containers); give it a private one for the call.
class RuntimeDirOverride {
public:
  explicit RuntimeDirOverride(const std::string& path) {
    if (const char* old = std::getenv("XDG_RUNTIME_DIR")) {
      m_old = old;
    }
    ::setenv("XDG_RUNTIME_DIR", path.c_str(), 1);
  }
  ~RuntimeDirOverride() {
    if (m_old) {
      ::setenv("XDG_RUNTIME_DIR", m_old->c_str(), 1);
    } else {
      ::unsetenv("XDG_RUNTIME_DIR");
    }
  }
  RuntimeDirOverride(const RuntimeDirOverride&) = delete;
  RuntimeDirOverride& operator=(const RuntimeDirOverride&) = delete;

private:
  std::optional<std::string> m_old;
};

// systemd-analyze exits 0 even for unknown keys or unparsable values (it only
// warns), so a clean verify means exit 0 *and* nothing printed.
// `others` are written beside it (a socket unit is verified with its service).
void expect_verifies(const std::string& unit_text, const std::string& name = "keyshim.service",
                     const std::vector<std::pair<std::string, std::string>>& others = {}) {
  TempDir dir;
  for (const auto& [other_name, other_text] : others) {
    dir.write(other_name, other_text, 0644);
  }
  std::string unit = dir.write(name, unit_text, 0644);
  ::mkdir((dir.path() + "/runtime").c_str(), 0700);
  RuntimeDirOverride runtime(dir.path() + "/runtime");
  for (bool user : {true, false}) {
    std::vector<std::string> argv = {"systemd-analyze"};
    if (user) {
      argv.push_back("--user");
    }
    argv.insert(argv.end(), {"verify", unit});
    service::CommandResult result = service::run_command_captured(argv);
    EXPECT_TRUE(result.ok()) << service::shell_command_text(argv) << ": " << result.describe() << "\n"
                             << result.output;
    EXPECT_EQ(result.output, "") << service::shell_command_text(argv);
  }
}

} // namespace

TEST(SystemdUnit, ShippedTemplateHasExactlyOneExecStartAndTheDocumentedDefaults) {
  std::string unit(service::systemd_unit_template());
  std::vector<std::string> exec_start = lines_starting_with(unit, "ExecStart=");
  ASSERT_EQ(exec_start.size(), 1u);
  EXPECT_EQ(exec_start[0], "ExecStart=/usr/bin/keyshim serve -c %h/.config/keyshim/keys.toml");
  EXPECT_EQ(lines_starting_with(unit, "ExecReload=").at(0), "ExecReload=/bin/kill -HUP $MAINPID");
  EXPECT_EQ(lines_starting_with(unit, "WantedBy=").at(0), "WantedBy=default.target");
  EXPECT_EQ(lines_starting_with(unit, "Restart=").at(0), "Restart=on-failure");
  EXPECT_EQ(lines_starting_with(unit, "Type=").at(0), "Type=notify");
  // The shipped unit also runs without its socket (systemctl --user enable keyshim.service).
  EXPECT_TRUE(lines_starting_with(unit, "Requires=").empty());
}

TEST(SystemdUnit, SocketActivatedUnitRequiresAndStartsAfterItsSocket) {
  std::string rendered = service::render_systemd_unit("/usr/bin/keyshim", "/home/u/keys.toml", true);
  EXPECT_EQ(lines_starting_with(rendered, "Requires="),
            (std::vector<std::string>{"Requires=keyshim.socket"}));
  EXPECT_EQ(lines_starting_with(rendered, "After="), (std::vector<std::string>{"After=keyshim.socket"}));
  // In [Unit], where systemd reads them.
  EXPECT_LT(rendered.find("Requires="), rendered.find("[Service]"));
  EXPECT_GT(rendered.find("Requires="), rendered.find("[Unit]"));
}

TEST(SystemdSocket, ShippedTemplateListensOnTheDefaultAddressForOneKeyshim) {
  std::string unit(service::systemd_socket_template());
  EXPECT_EQ(lines_starting_with(unit, "ListenStream="),
            (std::vector<std::string>{"ListenStream=127.0.0.1:8787"}));
  EXPECT_EQ(lines_starting_with(unit, "Accept=").at(0), "Accept=no");
  EXPECT_EQ(lines_starting_with(unit, "WantedBy=").at(0), "WantedBy=sockets.target");
}

TEST(SystemdSocket, RenderingListensOnThePoolFilesLoopbackAddress) {
  auto listen_stream = [](const std::string& host, int port) {
    return lines_starting_with(service::render_systemd_socket({host, port}), "ListenStream=");
  };
  EXPECT_EQ(listen_stream("127.0.0.1", 9911), (std::vector<std::string>{"ListenStream=127.0.0.1:9911"}));
  EXPECT_EQ(listen_stream("::1", 9911), (std::vector<std::string>{"ListenStream=[::1]:9911"}));
  // systemd resolves no names.
  EXPECT_EQ(listen_stream("localhost", 80), (std::vector<std::string>{"ListenStream=127.0.0.1:80"}));
}

TEST(SystemdSocket, RefusesAnAddressOnlyAProcessCouldPickOrThatIsNotLoopback) {
  EXPECT_THROW(service::render_systemd_socket({"127.0.0.1", 0}), std::invalid_argument);
  EXPECT_THROW(service::render_systemd_socket({"0.0.0.0", 8787}), std::invalid_argument);
  try {
    service::render_systemd_socket({"127.0.0.1", 0});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--no-socket"), std::string::npos) << e.what();
  }
}

TEST(SystemdSocket, RenderedSocketAndItsServicePassSystemdAnalyzeVerify) {
  if (!have_program("systemd-analyze")) {
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package: systemd)";
  }
  TempDir dir;
  std::string binary = make_executable(dir, "keyshim");
  std::string service_unit = service::render_systemd_unit(binary, dir.path() + "/keys.toml", true);
  std::string socket_unit = service::render_systemd_socket({"::1", 9911});
  expect_verifies(socket_unit, "keyshim.socket", {{"keyshim.service", service_unit}});
  expect_verifies(service_unit, "keyshim.service", {{"keyshim.socket", socket_unit}});
}

TEST(SystemdUnit, RenderingReplacesOnlyTheExecStartLine) {
  std::string rendered = service::render_systemd_unit("/opt/keyshim/bin/keyshim", "/home/u/keys.toml");
  EXPECT_EQ(lines_starting_with(rendered, "ExecStart=").at(0),
            "ExecStart=/opt/keyshim/bin/keyshim serve -c /home/u/keys.toml");

  std::string shipped(service::systemd_unit_template());
  std::string shipped_line = "ExecStart=/usr/bin/keyshim serve -c %h/.config/keyshim/keys.toml";
  shipped.replace(shipped.find(shipped_line), shipped_line.size(),
                  "ExecStart=/opt/keyshim/bin/keyshim serve -c /home/u/keys.toml");
  EXPECT_EQ(rendered, shipped);
}

TEST(SystemdUnit, PathsWithSpacesAndSpecialCharactersAreQuotedForExecStart) {
  std::string rendered =
      service::render_systemd_unit("/home/u/My Tools/100%/$x/keyshim", "/home/u/a \"b\" 100%$HOME\\x.toml");
  // The program path gets specifier expansion only; arguments get variable
  // expansion too (systemd.service(5), "Command lines").
  EXPECT_EQ(lines_starting_with(rendered, "ExecStart=").at(0),
            "ExecStart=\"/home/u/My Tools/100%%/$x/keyshim\" serve -c \"/home/u/a \\\"b\\\" "
            "100%%$$HOME\\\\x.toml\"");
}

TEST(SystemdUnit, ExecQuoteLeavesPlainPathsBareAndDoublesSpecifiers) {
  EXPECT_EQ(service::systemd_exec_quote("/usr/bin/keyshim"), "/usr/bin/keyshim");
  EXPECT_EQ(service::systemd_exec_quote("/a%b$c"), "/a%%b$$c");
  EXPECT_EQ(service::systemd_exec_quote("/a b"), "\"/a b\"");
  EXPECT_EQ(service::systemd_exec_quote("/a'b"), "\"/a'b\"");
  EXPECT_EQ(service::systemd_exec_quote("/a;b"), "\"/a;b\"");
  EXPECT_EQ(service::systemd_exec_quote(""), "\"\"");
  EXPECT_EQ(service::systemd_exec_path("/a%b$c"), "/a%%b$c");
}

TEST(SystemdUnit, RefusesABinaryPathSystemdCannotRun) {
  // systemd rejects these with "Executable name contains special characters".
  for (const char* path : {"/opt/it's/keyshim", "/opt/\"q\"/keyshim", "/opt/back\\slash/keyshim"}) {
    EXPECT_THROW(service::render_systemd_unit(path, "/k.toml"), std::invalid_argument) << path;
  }
}

TEST(SystemdUnit, RefusesRelativePathsAndControlCharacters) {
  EXPECT_THROW(service::render_systemd_unit("keyshim", "/k.toml"), std::invalid_argument);
  EXPECT_THROW(service::render_systemd_unit("/usr/bin/keyshim", "keys.toml"), std::invalid_argument);
  // A newline would end ExecStart= and let the path add directives.
  EXPECT_THROW(service::render_systemd_unit("/usr/bin/keyshim", "/k\nExecStartPre=/bin/evil"),
               std::invalid_argument);
}

TEST(SystemdUnit, ShippedTemplatePassesSystemdAnalyzeVerify) {
  if (!have_program("systemd-analyze")) {
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package: systemd)";
  }
  TempDir dir;
  std::string binary = make_executable(dir, "keyshim");
  std::string unit(service::systemd_unit_template());
  unit.replace(unit.find("/usr/bin/keyshim"), 16, binary);
  expect_verifies(unit);
}

TEST(SystemdUnit, RenderedUnitWithAwkwardPathsPassesSystemdAnalyzeVerify) {
  if (!have_program("systemd-analyze")) {
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package: systemd)";
  }
  TempDir dir;
  // verify checks the quoted first argument resolves to this very file.
  std::string binary = make_executable(dir, "my tools/$HOME; 100%/keyshim");
  expect_verifies(service::render_systemd_unit(binary, dir.path() + "/my keys/$keys \"x\" 'y' \\z%h.toml"));
}

TEST(LaunchdPlist, ShippedTemplateIsWellFormedAndHasThePlaceholders) {
  std::string plist(service::launchd_plist_template());
  EXPECT_EQ(test::xml_problem(plist), "");
  EXPECT_EQ(test::plist_string(plist, "Label"), "dev.keyshim");
  EXPECT_EQ(test::plist_string_array(plist, "ProgramArguments"),
            (std::vector<std::string>{"@KEYSHIM_BIN@", "serve", "-c", "@KEYSHIM_CONFIG@"}));
}

TEST(LaunchdPlist, RenderingFillsEveryPlaceholder) {
  std::string plist = service::render_launchd_plist("/opt/homebrew/bin/keyshim",
                                                    "/Users/u/.config/keyshim/keys.toml", "/Users/u/");
  EXPECT_EQ(plist.find('@'), std::string::npos) << plist;
  EXPECT_EQ(test::xml_problem(plist), "");
  EXPECT_EQ(test::plist_string_array(plist, "ProgramArguments"),
            (std::vector<std::string>{"/opt/homebrew/bin/keyshim", "serve", "-c",
                                      "/Users/u/.config/keyshim/keys.toml"}));
  EXPECT_EQ(test::plist_string(plist, "StandardErrorPath"), "/Users/u/Library/Logs/keyshim/keyshim.log");
  EXPECT_EQ(test::plist_string(plist, "StandardOutPath"), "/Users/u/Library/Logs/keyshim/keyshim.log");
}

TEST(LaunchdPlist, WithASocketLaunchdOwnsTheAddressAndStartsKeyshimOnDemand) {
  std::string plist = service::render_launchd_plist("/opt/homebrew/bin/keyshim", "/Users/u/keys.toml",
                                                    "/Users/u", {{"localhost", 9911}});
  EXPECT_EQ(test::xml_problem(plist), "");
  EXPECT_EQ(test::plist_string(plist, "SockNodeName"), "127.0.0.1");
  EXPECT_EQ(test::plist_string(plist, "SockServiceName"), "9911");
  EXPECT_EQ(test::plist_string(plist, "SockType"), "stream");
  EXPECT_EQ(test::plist_string(plist, "SockFamily"), "IPv4");
  // serve asks launch_activate_socket for this name.
  EXPECT_NE(plist.find("<key>Listeners</key>"), std::string::npos);
  // Started at the first connection, not at login or after every exit.
  EXPECT_EQ(plist.find("RunAtLoad"), std::string::npos) << plist;
  EXPECT_EQ(plist.find("KeepAlive"), std::string::npos) << plist;
  EXPECT_EQ(test::plist_string_array(plist, "ProgramArguments"),
            (std::vector<std::string>{"/opt/homebrew/bin/keyshim", "serve", "-c", "/Users/u/keys.toml"}));
  std::string v6 = service::render_launchd_plist("/k", "/c", "/Users/u", {{"::1", 9911}});
  EXPECT_EQ(test::plist_string(v6, "SockFamily"), "IPv6");
}

TEST(LaunchdPlist, PathsAreXmlEscapedAndReadBackUnchanged) {
  std::string binary = "/Users/u/A&B <tools>/keyshim";
  std::string config = "/Users/u/\"my\" 'keys' -- x.toml";
  std::string home = "/Users/R&D";
  std::string plist = service::render_launchd_plist(binary, config, home);
  EXPECT_EQ(test::xml_problem(plist), "");
  EXPECT_NE(plist.find("A&amp;B &lt;tools&gt;"), std::string::npos);
  EXPECT_EQ(test::plist_string_array(plist, "ProgramArguments"),
            (std::vector<std::string>{binary, "serve", "-c", config}));
  EXPECT_EQ(test::plist_string(plist, "StandardErrorPath"), "/Users/R&D/Library/Logs/keyshim/keyshim.log");
}

TEST(LaunchdPlist, RefusesRelativePathsAndControlCharacters) {
  EXPECT_THROW(service::render_launchd_plist("/bin/keyshim", "/k.toml", "relative"), std::invalid_argument);
  EXPECT_THROW(service::render_launchd_plist("/bin/keyshim", "/k\x01.toml", "/Users/u"),
               std::invalid_argument);
}

TEST(LaunchdPlist, RenderedPlistPassesXmllintWhenInstalled) {
  if (!have_program("xmllint")) {
    GTEST_SKIP() << "xmllint is not installed (Debian package: libxml2-utils)";
  }
  TempDir dir;
  std::string path = dir.write(
      "dev.keyshim.plist", service::render_launchd_plist("/a&b/keyshim", "/c<d>/k.toml", "/Users/u"), 0644);
  service::CommandResult result = service::run_command_captured({"xmllint", "--noout", "--nonet", path});
  EXPECT_TRUE(result.ok()) << result.output;
}

TEST(XmlCheck, CatchesTheMistakesItIsThereFor) {
  // The checker must itself fail on bad input, or the tests above prove nothing.
  EXPECT_NE(test::xml_problem("<a><b></a></b>"), "");
  EXPECT_NE(test::xml_problem("<a>x & y</a>"), "");
  EXPECT_NE(test::xml_problem("<a>1 < 2</a>"), "");
  EXPECT_NE(test::xml_problem("<a><!-- x -- y --></a>"), "");
  EXPECT_NE(test::xml_problem("<a/><b/>"), "");
  EXPECT_NE(test::xml_problem("<a>"), "");
  EXPECT_EQ(test::xml_problem("<?xml version=\"1.0\"?><a x=\"1\"><b/>t&amp;u</a>"), "");
}
