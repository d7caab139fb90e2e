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

constexpr const char* k_starter_env = "KEYSHIM_OPENAI_KEY";

constexpr const char* k_header =
    R"(# keyshim pool file. keys.example.toml (shipped with keyshim) documents every
# setting. This file holds API keys: keyshim refuses it unless only you can
# read it (mode 0600). After editing, run: keyshim check
)";

constexpr const char* k_pools_intro = R"TOML(
# One pool per provider, each with its own keys. A request for /NAME/... goes
# to pool NAME with /NAME removed: OPENAI_BASE_URL=http://127.0.0.1:8787/openai/v1,
# ANTHROPIC_BASE_URL=http://127.0.0.1:8787/anthropic. `eval "$(keyshim env)"`
# sets them for you. A pool takes these settings (shown at their defaults):
)TOML";

constexpr const char* k_pools = R"(
[pools.openai]
base_url = "https://api.openai.com"
auth = "bearer"

# One [[pools.NAME.keys]] entry per key, tried in file order with strategy
# "ordered". Give each key in exactly one way:
#   key = "sk-..."                              the key itself
#   key_env = "NAME"                            an environment variable
#   key_cmd = ["pass", "show", "openai/main"]   first line a command prints (no shell)
# Per-key base_url, auth, ca_file and max_concurrent override the pool's.
[[pools.openai.keys]]
label = "openai-main"
key_env = "KEYSHIM_OPENAI_KEY"   # export KEYSHIM_OPENAI_KEY=sk-..., or replace this line

# [[pools.openai.keys]]
# label = "openai-backup"
# key_cmd = ["pass", "show", "openai/backup"]

# Anthropic (Claude Code, the Anthropic SDKs): uncomment and give a key.
# [pools.anthropic]
# base_url = "https://api.anthropic.com"
# auth = "x-api-key"
#
# [[pools.anthropic.keys]]
# label = "anthropic-main"
# key_env = "KEYSHIM_ANTHROPIC_KEY"

# Gemini (gemini-cli, the @google/genai SDK): uncomment and give a key.
# [pools.gemini]
# base_url = "https://generativelanguage.googleapis.com"
# auth = "x-goog-api-key"
#
# [[pools.gemini.keys]]
# label = "gemini-main"
# key_env = "KEYSHIM_GEMINI_KEY"
)";

// Every setting of `section` commented out at its default, generated from
// the settings table so the two cannot disagree; under a [name] header
// when `header` is set.
std::string settings_text(config::Section section, bool header) {
  std::string out = header ? fmt::format("\n[{}]\n", config::to_string(section)) : std::string();
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
  return k_header + settings_text(config::Section::server, true) + k_pools_intro +
         settings_text(config::Section::upstream, false) + k_pools;
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
             "  1. give it your keys: export {}=sk-..., or edit the [[pools.openai.keys]] entries;\n"
             "     uncomment the anthropic and gemini pools if you use them\n"
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
