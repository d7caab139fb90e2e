#pragma once
// keyshim's server running in-process on 127.0.0.1 with its pool file in a
// private temporary directory, for integration tests.
#include "server/shim_server.hpp"
#include "support/temp_dir.hpp"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace keyshim::test {

class Shim {
public:
  // `pool_toml` is a whole pool file; "@UPSTREAM@" is replaced by `upstream_url`.
  Shim(const std::string& pool_toml, const std::string& upstream_url);
  ~Shim();
  Shim(const Shim&) = delete;
  Shim& operator=(const Shim&) = delete;

  int port() const { return m_server->port(); }
  server::ShimServer& server() { return *m_server; }
  // Rewrite the pool file and reload (as SIGHUP would).
  bool reload_with(const std::string& pool_toml);
  const std::string& config_path() const { return m_path; }

private:
  std::string m_upstream_url;
  TempDir m_dir;
  std::string m_path;
  std::unique_ptr<server::ShimServer> m_server;
  std::thread m_thread;
};

// A pool of `n` keys "sk-test-key-<i>-..." labelled k0..k(n-1) with `extra`
// appended to [upstream]. Short timeouts suited to tests.
std::string pool_toml(int n, const std::string& upstream_extra = "", const std::string& server_extra = "");
// The secret of key i in pool_toml().
std::string test_key(int i);

// A key of a named pool: its label, its secret, settings of its own.
struct PoolKey {
  PoolKey(std::string label_, std::string secret_, std::string extra_ = "")
      : label(std::move(label_)), secret(std::move(secret_)), extra(std::move(extra_)) {}
  std::string label;
  std::string secret;
  std::string extra; // settings of this key alone, e.g. "max_concurrent = 1\n"
};
// A [pools.NAME] table at `base_url` with `extra` settings (test timeouts
// unless `extra` sets them), then one [[pools.NAME.keys]] entry per key.
// Appended to pool_toml() or to a "[server]" table it makes a pool file.
std::string pool_section(const std::string& name, const std::string& base_url, const std::string& extra,
                         const std::vector<PoolKey>& keys);

// One key for each provider's pool of three_provider_pools().
extern const PoolKey k_openai_key;
extern const PoolKey k_anthropic_key;
extern const PoolKey k_gemini_key;
// A pool file of the three providers, each pool with its own auth style
// (bearer, x-api-key, x-goog-api-key) and its one key above.
std::string three_provider_pools(const std::string& openai_url, const std::string& anthropic_url,
                                 const std::string& gemini_url);

} // namespace keyshim::test
