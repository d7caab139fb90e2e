// keyshim init: write a commented starter pool file, private from the first
// byte (created 0600 inside 0700 directories), and never over an existing one.
#include "cli/commands.hpp"
#include "config/file_access.hpp"
#include "config/settings_table.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

namespace keyshim::cli {
namespace {

constexpr const char* k_starter_env = "KEYSHIM_KEY_1";

constexpr const char* k_header =
    R"(# keyshim pool file. keys.example.toml (shipped with keyshim) documents every
# setting. This file holds API keys: keyshim refuses it unless only you can
# read it (mode 0600). After editing, run: keyshim check
)";

constexpr const char* k_keys = R"(
# One [[keys]] entry per key, tried in file order with strategy "ordered".
# Give each key in exactly one way:
#   key = "sk-..."                              the key itself
#   key_env = "NAME"                            an environment variable
#   key_cmd = ["pass", "show", "openai/main"]   first line a command prints (no shell)
# Per-key base_url, auth and ca_file override [upstream].
[[keys]]
label = "main"
key_env = "KEYSHIM_KEY_1"   # export KEYSHIM_KEY_1=sk-..., or replace this line

# [[keys]]
# label = "backup"
# key_cmd = ["pass", "show", "openai/backup"]
)";

// The [server] and [upstream] tables with every setting commented out at its
// default, generated from the settings table so the two cannot disagree.
std::string section_text(config::Section section) {
  std::string out = fmt::format("\n[{}]\n", config::to_string(section));
  for (const config::Setting& setting : config::settings_table()) {
    if (setting.section != section) {
      continue;
    }
    std::string value = setting.default_text.empty() ? "\"...\"" : std::string(setting.default_text);
    out += fmt::format("# {}\n# {} = {}\n", setting.doc, setting.name, value);
  }
  return out;
}

std::string starter_text() {
  return k_header + section_text(config::Section::server) + section_text(config::Section::upstream) + k_keys;
}

// mkdir -p with mode 0700 for every directory it creates (existing ones are left alone).
std::string create_private_dirs(const std::filesystem::path& dir) {
  std::filesystem::path prefix;
  for (const std::filesystem::path& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return fmt::format("cannot create directory {}: {}", prefix.string(), std::strerror(errno));
    }
  }
  return "";
}

std::string write_new_private_file(const std::string& path, const std::string& text) {
  // O_EXCL makes "never overwrite" hold even against a file created a moment ago.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return "already exists; init never overwrites a pool file. Edit it, then run: keyshim check -c " + path;
    }
    return fmt::format("cannot create: {}", std::strerror(errno));
  }
  std::size_t written = 0;
  std::string error;
  while (written < text.size() && error.empty()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno != EINTR) {
      error = fmt::format("cannot write: {}", std::strerror(errno));
    } else if (n > 0) {
      written += static_cast<std::size_t>(n);
    }
  }
  if (::fchmod(fd, 0600) != 0 && error.empty()) {
    error = fmt::format("cannot set mode 0600: {}", std::strerror(errno));
  }
  if (::close(fd) != 0 && error.empty()) {
    error = fmt::format("cannot write: {}", std::strerror(errno));
  }
  return error;
}

int run_init(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::string error = parent.empty() ? "" : create_private_dirs(parent);
  if (error.empty()) {
    error = write_new_private_file(path, starter_text());
  }
  if (!error.empty()) {
    fmt::print(stderr, "{}: {}\n", path, error);
    return 1;
  }
  fmt::print("wrote {} (mode 0600)\n"
             "next:\n"
             "  1. give it your keys: export {}=sk-..., or edit the [[keys]] entries\n"
             "  2. keyshim check -c {}\n"
             "  3. keyshim serve -c {}\n",
             path, k_starter_env, path, path);
  if (std::string problem = config::directory_problem(path); !problem.empty()) {
    fmt::print(stderr, "{}: warning: {}\n", path, problem);
  }
  return 0;
}

} // namespace

Subcommand add_init(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "init", "write a commented starter pool file (mode 0600); never overwrites an existing file");
  add_config_option(*app, *path);
  return {app, [path] { return run_init(resolve_config_path(*path)); }};
}

} // namespace keyshim::cli
