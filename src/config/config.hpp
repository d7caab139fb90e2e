#pragma once
// The validated pool file. Everything here has been checked at load time; the
// rest of keyshim trusts it without re-validating.
#include "config/model_filter.hpp"
#include "config/proxy.hpp"
#include "util/clock.hpp"
#include "util/secret.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::config {

using std::chrono::milliseconds;

// How the pool key travels to the upstream.
enum class AuthStyle { bearer, x_api_key, x_goog_api_key, api_key, query };

struct Auth {
  AuthStyle style = AuthStyle::bearer;
  std::string query_param; // only for AuthStyle::query ("query:key" -> "key")

  // "bearer", "x-api-key", ..., "query:key": the form written in the file.
  std::string text() const;
  bool operator==(const Auth&) const = default;
};

enum class Strategy { ordered, round_robin, least_recently_used };
// "ordered", "round-robin", "least-recently-used".
const char* to_string(Strategy strategy);

// Which of a pool's exchanges the capture ring keeps (docs/behaviour.md §12.1).
enum class CaptureMode { off, errors, all };
// "off", "errors", "all".
const char* to_string(CaptureMode mode);

// A parsed base_url, split into what the relay needs: where to connect (host,
// port, TLS or not; the host is also the TLS server name and the Host field)
// and the path put before every request's target.
struct UpstreamUrl {
  std::string scheme; // "https" or "http"
  std::string host;   // without brackets for IPv6
  int port = 443;
  std::string path_prefix; // "" or "/something" without trailing slash

  bool tls() const { return scheme == "https"; }
  // "https://api.openai.com" / "http://127.0.0.1:9000/v1" - normalised form.
  std::string text() const;
  bool operator==(const UpstreamUrl&) const = default;
};

// Parse "scheme://host[:port][/prefix]". nullopt with `error` set when invalid.
std::optional<UpstreamUrl> parse_upstream_url(const std::string& text, std::string& error);

struct ListenAddress {
  std::string host = "127.0.0.1"; // without brackets for IPv6
  int port = 8787;

  // "127.0.0.1:8787" / "[::1]:8787".
  std::string text() const;
  bool operator==(const ListenAddress&) const = default;
};

// Parse "HOST:PORT", "[V6]:PORT" or "localhost:PORT" and require loopback.
std::optional<ListenAddress> parse_listen_address(const std::string& text, std::string& error);
// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

// The zone a day of the per-day limits is counted in: the machine's own, or
// a fixed offset from UTC ("UTC" is +00:00).
struct DayZone {
  bool local = true;
  int utc_offset_minutes = 0; // only when !local; east of UTC is positive

  // "local", "UTC", "+02:00", "-08:00": the form written in the file.
  std::string text() const;
  bool operator==(const DayZone&) const = default;
};

// Limits of one's own on a key: requests and tokens (input and output
// together) per minute and per day, 0 for none; and where its day begins.
struct Limits {
  std::uint64_t requests_per_minute = 0;
  std::uint64_t requests_per_day = 0;
  std::uint64_t tokens_per_minute = 0;
  std::uint64_t tokens_per_day = 0;
  int day_start = 0; // minutes after midnight in `day_zone`
  DayZone day_zone;

  bool any() const { return requests_per_minute + requests_per_day + tokens_per_minute + tokens_per_day > 0; }
  bool operator==(const Limits&) const = default;
};

struct ServerSettings {
  ListenAddress listen;
  std::optional<util::Secret> client_token;
  std::vector<std::string> allowed_origins;
  std::uint64_t max_request_body = 64ull * 1024 * 1024;
  milliseconds drain_timeout{30'000};
  bool state = true; // keep health across restarts in the state file (config/paths.hpp)
  // The capture ring: how many exchanges it keeps, and how much of each body.
  int capture_size = 200;
  std::uint64_t capture_body_limit = 64 * 1024;
};

struct UpstreamSettings {
  UpstreamUrl base_url{"https", "api.openai.com", 443, ""};
  Auth auth;
  Strategy strategy = Strategy::ordered;
  int max_attempts = 4;
  milliseconds connect_timeout{10'000};
  milliseconds first_byte_timeout{600'000};
  milliseconds idle_timeout{300'000};
  milliseconds max_cooldown{86'400'000};
  std::optional<std::string> ca_file;
  milliseconds max_wait{0};          // 0: no key now means 503 now
  std::optional<int> max_concurrent; // default for the pool's keys; unset: unlimited
  // How long a session keeps its key after its last request; 0: no session affinity.
  milliseconds session_ttl{3'600'000};
  std::optional<ProxySetting> proxy; // unset: the environment decides (config/proxy.hpp)
  // Defaults for the pool's keys (config/model_filter.hpp): unset, every model.
  std::optional<std::vector<std::string>> models;
  std::vector<std::string> exclude_models;
  // Limits of one's own, the default for each of the pool's keys; unset: none.
  std::optional<std::uint64_t> requests_per_minute;
  std::optional<std::uint64_t> requests_per_day;
  std::optional<std::uint64_t> tokens_per_minute;
  std::optional<std::uint64_t> tokens_per_day;
  int day_start = 0; // where the per-day limits' day begins, minutes after midnight
  DayZone day_zone;
  CaptureMode capture = CaptureMode::errors; // which exchanges the capture ring keeps
};

// A key_cmd key: the command, run again to refresh the key (behaviour.md §10).
struct KeyCommand {
  std::vector<std::string> argv;
  std::optional<milliseconds> refresh;    // key_cmd_refresh: run it again this long after each run
  std::optional<util::TimePoint> expires; // the expiry the load's run reported, if any
};

struct KeyConfig {
  std::string label; // defaults to the fingerprint
  util::Secret secret;
  UpstreamUrl base_url; // per-key override or the [upstream] default
  Auth auth;
  std::optional<std::string> ca_file;
  int max_concurrent = 0; // requests in flight at once; 0: unlimited
  ModelFilter models;     // which models it serves; each list the key's own or else the pool's
  // Resolved from the pool's proxy or the environment: the proxy its
  // connections tunnel through, or none.
  std::optional<ProxyUrl> proxy;
  Limits limits;      // the key's own, else its pool's
  std::string source; // where the secret came from: "key", "key_env OPENAI_KEY", "key_cmd pass"
  std::optional<KeyCommand> command; // set for a key_cmd key whose command ran
};

// The name under which logs and status show the pool of the top-level
// [upstream] and [[keys]]; no [pools.NAME] may take it.
inline constexpr std::string_view k_default_pool_name = "default";

// Names no [pools.NAME] may take: the default pool's, and keyshim's own
// endpoints, which a pool at /NAME would shadow.
inline constexpr std::array<std::string_view, 5> k_reserved_pool_names = {k_default_pool_name, "health",
                                                                          "status", "metrics", "captures"};

// One upstream API and its keys. Requests for /NAME/... go to pool NAME with
// the prefix removed; the default pool serves every other path.
struct PoolConfig {
  std::string name; // k_default_pool_name for the default pool
  UpstreamSettings upstream;
  std::vector<KeyConfig> keys;

  bool is_default() const { return name == k_default_pool_name; }
  // Where clients reach it: "/" for the default pool, else "/NAME".
  std::string route() const { return is_default() ? "/" : "/" + name; }
};

struct Config {
  std::string path; // the file it was loaded from
  ServerSettings server;
  std::vector<PoolConfig> pools; // the default pool first when there is one, then the file's order

  const PoolConfig* find_pool(std::string_view name) const;
  const PoolConfig* default_pool() const { return find_pool(k_default_pool_name); }
  std::size_t key_count() const;
};

} // namespace keyshim::config
