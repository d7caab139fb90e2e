// keyshim env: the variables that point common tools at keyshim, printed as
// shell assignments for `eval "$(keyshim env)"` (or `keyshim env --shell fish
// | source`).
#include "cli/commands.hpp"
#include "config/loader.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace keyshim::cli {
namespace {

struct EnvOptions {
  std::string config;
  std::string shell = "sh";
};

// What keyshim serves when the pool file is unusable (serve does the same).
constexpr const char* k_default_listen = "127.0.0.1:8787";
// Clients must send some key; keyshim replaces it. Without client_token any
// value works, and this one says where requests are going.
constexpr const char* k_placeholder_key = "keyshim";

// Which tools to point at keyshim, judged from where a pool's keys go:
// pointing Claude Code at a pool of OpenAI keys would break it.
struct Providers {
  bool openai = false; // OpenAI and every OpenAI-compatible upstream
  bool anthropic = false;
  bool gemini = false;
};

// Where each tool's requests go: keyshim's URL plus the route of the first
// pool (the default pool first) that serves its provider; "" for none.
struct Targets {
  std::string openai;
  std::string anthropic;
  std::string gemini;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Providers providers_of(const config::PoolConfig& pool) {
  Providers providers;
  for (const config::KeyConfig& key : pool.keys) {
    const std::string& host = key.base_url.host;
    config::AuthStyle style = key.auth.style;
    if (host == "anthropic.com" || ends_with(host, ".anthropic.com") ||
        style == config::AuthStyle::x_api_key) {
      providers.anthropic = true;
    } else if (host == "generativelanguage.googleapis.com" || style == config::AuthStyle::x_goog_api_key ||
               (style == config::AuthStyle::query && key.auth.query_param == "key")) {
      providers.gemini = true;
    } else {
      providers.openai = true;
    }
  }
  return providers;
}

Targets targets_of(const config::Config& config, const std::string& url) {
  Targets targets;
  for (const config::PoolConfig& pool : config.pools) {
    Providers providers = providers_of(pool);
    std::string base = pool.is_default() ? url : url + pool.route();
    for (auto [serves, target] : {std::pair{providers.openai, &targets.openai},
                                  std::pair{providers.anthropic, &targets.anthropic},
                                  std::pair{providers.gemini, &targets.gemini}}) {
      if (serves && target->empty()) {
        *target = base;
      }
    }
  }
  if (targets.openai.empty() && targets.anthropic.empty() && targets.gemini.empty()) {
    targets = {url, url, url};
  }
  return targets;
}

struct Assignment {
  std::string name;
  std::string value;
};

std::vector<Assignment> assignments(const std::string& url, const std::string& key, const Targets& targets) {
  std::vector<Assignment> out = {{"KEYSHIM_URL", url}};
  if (!targets.openai.empty()) {
    // The OpenAI SDKs, Codex and aider take a base URL that includes /v1.
    out.push_back({"OPENAI_BASE_URL", targets.openai + "/v1"});
    out.push_back({"OPENAI_API_KEY", key});
  }
  if (!targets.anthropic.empty()) {
    // The Anthropic SDKs and Claude Code append /v1 themselves. Only the
    // x-api-key variable: setting ANTHROPIC_AUTH_TOKEN as well makes Claude
    // Code warn about conflicting credentials.
    out.push_back({"ANTHROPIC_BASE_URL", targets.anthropic});
    out.push_back({"ANTHROPIC_API_KEY", key});
  }
  if (!targets.gemini.empty()) {
    // Read by gemini-cli and the @google/genai SDK, which append /v1beta.
    out.push_back({"GOOGLE_GEMINI_BASE_URL", targets.gemini});
    out.push_back({"GEMINI_API_KEY", key});
  }
  return out;
}

// POSIX sh: inside single quotes nothing is special; a quote is closed,
// escaped and reopened.
std::string sh_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// fish: inside single quotes only \' and \\ are escapes.
std::string fish_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "'";
}

// The comment line is evaluated too: a newline in the path would end it and
// run the rest as a command.
std::string comment_safe(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return text;
}

int run_env(const EnvOptions& options) {
  std::string path = resolve_config_path(options.config);
  std::string listen = k_default_listen;
  std::string key = k_placeholder_key;
  std::optional<Targets> targets;

  // env runs from shell start-up files: a pool file that cannot be used must
  // not leave the shell without its variables, only warn.
  config::LoadResult loaded = config::load_pool_file(path, config::SecretResolution::skip);
  if (loaded.ok()) {
    const config::Config& config = *loaded.config;
    listen = config.server.listen.text();
    // client_token is the user's own token for this shim, not an upstream
    // key: it exists to be handed to the tools, and printing it is how
    // `eval "$(keyshim env)"` hands it over.
    if (config.server.client_token) {
      key = config.server.client_token->reveal();
    }
    targets = targets_of(config, "http://" + listen);
  } else {
    const config::Problem& first = loaded.problems.front();
    std::size_t more = loaded.problems.size() - 1;
    fmt::print(stderr, "keyshim: warning: {}{}\n", first.text(),
               more == 0 ? std::string() : fmt::format(" (and {} more)", more));
    fmt::print(stderr, "keyshim: warning: using the default address {}; see `keyshim check -c {}`\n", listen,
               path);
  }

  std::string url = "http://" + listen;
  bool fish = options.shell == "fish";
  fmt::print("# keyshim at {} (pool file: {})\n", url, comment_safe(path));
  for (const Assignment& assignment : assignments(url, key, targets.value_or(Targets{url, url, url}))) {
    if (fish) {
      fmt::print("set -gx {} {}\n", assignment.name, fish_quote(assignment.value));
    } else {
      fmt::print("export {}={}\n", assignment.name, sh_quote(assignment.value));
    }
  }
  return 0;
}

} // namespace

Subcommand add_env(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "env", "print the variables that point common tools at keyshim, for eval \"$(keyshim env)\"");
  auto options = std::make_shared<EnvOptions>();
  add_config_option(*app, options->config);
  app->add_option("--shell", options->shell, "syntax of the output (default: sh)")
      ->check(CLI::IsMember({"sh", "fish"}));
  return {app, [options] { return run_env(*options); }};
}

} // namespace keyshim::cli
