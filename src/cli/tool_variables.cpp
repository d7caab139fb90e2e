#include "cli/tool_variables.hpp"

#include <utility>

namespace keyshim::cli {
namespace {

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
    for (auto [serves, target] :
         {std::pair{providers.openai, &targets.openai}, std::pair{providers.anthropic, &targets.anthropic},
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

std::vector<ToolVariable> assignments(const std::string& url, const std::string& key,
                                      const Targets& targets) {
  std::vector<ToolVariable> out = {{"KEYSHIM_URL", url}};
  if (!targets.openai.empty()) {
    // The OpenAI SDKs, Qwen Code and aider take a base URL that includes
    // /v1; aider reads OPENAI_API_BASE. Codex 0.171 ignores OPENAI_BASE_URL
    // for its built-in provider (its base URL is a command-line setting, see
    // tool_arguments) and sends CODEX_API_KEY, not OPENAI_API_KEY, on its
    // Responses WebSocket.
    out.push_back({"OPENAI_BASE_URL", targets.openai + "/v1"});
    out.push_back({"OPENAI_API_BASE", targets.openai + "/v1"});
    out.push_back({"OPENAI_API_KEY", key});
    out.push_back({"CODEX_API_KEY", key});
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
    // gemini-cli 0.61 takes GOOGLE_GEMINI_BASE_URL as auth type "gateway",
    // which its own check then refuses; GEMINI_DEFAULT_AUTH_TYPE preselects
    // the API key in its interactive auth dialog (run does more for -p).
    out.push_back({"GOOGLE_GEMINI_BASE_URL", targets.gemini});
    out.push_back({"GEMINI_API_KEY", key});
    out.push_back({"GEMINI_DEFAULT_AUTH_TYPE", "gemini-api-key"});
  }
  return out;
}

} // namespace

std::vector<ToolVariable> tool_variables(const config::Config* config, const std::string& listen) {
  std::string url = "http://" + listen;
  if (config == nullptr) {
    return assignments(url, k_placeholder_key, Targets{url, url, url});
  }
  // client_token is the user's own token for this shim, not an upstream
  // key: it exists to be handed to the tools.
  std::string key = config->server.client_token ? config->server.client_token->reveal() : k_placeholder_key;
  return assignments(url, key, targets_of(*config, url));
}

} // namespace keyshim::cli
