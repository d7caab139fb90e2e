#include "support/http_shim.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace keyshim::test {
namespace {

std::string substitute(std::string text, const std::string& upstream) {
  const std::string marker = "@UPSTREAM@";
  for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
    text.replace(at, marker.size(), upstream);
  }
  return text;
}

// `base_url`, `extra`, then the test timeouts `extra` does not set.
std::string upstream_settings(const std::string& base_url, const std::string& extra) {
  std::string upstream = "base_url = \"" + base_url + "\"\n" + extra;
  for (const char* setting :
       {"connect_timeout = \"2s\"\n", "first_byte_timeout = \"5s\"\n", "idle_timeout = \"5s\"\n"}) {
    std::string name = std::string(setting).substr(0, std::string(setting).find(' '));
    if (extra.find(name) == std::string::npos) {
      upstream += setting;
    }
  }
  return upstream;
}

} // namespace

Shim::Shim(const std::string& pool, const std::string& upstream_url) : m_upstream_url(upstream_url) {
  m_path = m_dir.write("keys.toml", substitute(pool, upstream_url), 0600);
  server::ServeOptions options;
  options.config_path = m_path;
  options.listen = config::ListenAddress{"127.0.0.1", 0};
  m_server = std::make_unique<server::ShimServer>(options);
  m_server->load();
  std::string error;
  if (!m_server->bind(error)) {
    throw std::runtime_error(error);
  }
  m_thread = std::thread([this] { m_server->serve(); });
}

Shim::~Shim() {
  m_server->begin_shutdown();
  m_server->abort_in_flight();
  m_thread.join();
}

bool Shim::reload_with(const std::string& pool) {
  m_dir.write("keys.toml", substitute(pool, m_upstream_url), 0600);
  return m_server->reload();
}

std::string test_key(int i) {
  return fmt::format("sk-test-key-{}-0123456789abcdef", i);
}

std::string pool_toml(int n, const std::string& upstream_extra, const std::string& server_extra) {
  std::string upstream = upstream_settings("@UPSTREAM@", upstream_extra);
  std::string text = "[server]\n" + server_extra + "\n[upstream]\n" + upstream + "\n";
  for (int i = 0; i < n; ++i) {
    text += fmt::format("[[keys]]\nlabel = \"k{}\"\nkey = \"{}\"\n", i, test_key(i));
  }
  return text;
}

std::string pool_section(const std::string& name, const std::string& base_url, const std::string& extra,
                         const std::vector<PoolKey>& keys) {
  std::string text = fmt::format("\n[pools.{}]\n{}", name, upstream_settings(base_url, extra));
  for (const PoolKey& key : keys) {
    text += fmt::format("[[pools.{}.keys]]\nlabel = \"{}\"\nkey = \"{}\"\n{}", name, key.label, key.secret,
                        key.extra);
  }
  return text;
}

const PoolKey k_openai_key{"oa-main", "sk-openai-test-0123456789abcdef"};
const PoolKey k_anthropic_key{"ant-main", "sk-ant-test-0123456789abcdef"};
const PoolKey k_gemini_key{"gem-main", "AIza-gemini-test-0123456789abcdef"};

std::string three_provider_pools(const std::string& openai_url, const std::string& anthropic_url,
                                 const std::string& gemini_url) {
  return "[server]\n" + pool_section("openai", openai_url, "auth = \"bearer\"\n", {k_openai_key}) +
         pool_section("anthropic", anthropic_url, "auth = \"x-api-key\"\n", {k_anthropic_key}) +
         pool_section("gemini", gemini_url, "auth = \"x-goog-api-key\"\n", {k_gemini_key});
}

} // namespace keyshim::test
