#include "config/settings_table.hpp"

#include <type_traits>

namespace keyshim::config {
namespace {

template <typename T> struct member_of;
template <typename Class, typename Member> struct member_of<Member Class::*> {
  using owner = Class;
  using type = Member;
};

template <typename T> struct optional_inner { using type = T; };
template <typename T> struct optional_inner<std::optional<T>> { using type = T; };

// Store a decoded value into a struct member: optionals are filled, integers
// narrowed (the table's bounds have been checked), everything else moved.
template <typename Member> void assign(Member& member, SettingValue&& value) {
  using Inner = typename optional_inner<Member>::type;
  if constexpr (std::is_same_v<Inner, int>) {
    member = static_cast<int>(std::get<std::int64_t>(value));
  } else {
    member = std::get<Inner>(std::move(value));
  }
}

template <auto Member> void apply_member(SettingTarget& target, SettingValue&& value) {
  using Owner = typename member_of<decltype(Member)>::owner;
  if constexpr (std::is_same_v<Owner, ServerSettings>) {
    assign(target.server->*Member, std::move(value));
  } else if constexpr (std::is_same_v<Owner, UpstreamSettings>) {
    assign(target.upstream->*Member, std::move(value));
  } else {
    assign(target.key->*Member, std::move(value));
  }
}

constexpr std::int64_t k_ms = 1;
constexpr std::int64_t k_second_ms = 1'000;
constexpr std::int64_t k_day_ms = 86'400'000;
constexpr std::int64_t k_max_attempts_limit = 20;
constexpr std::int64_t k_hour_ms = 3'600'000;
constexpr std::int64_t k_max_concurrent_limit = 100'000;
constexpr std::int64_t k_capture_size_limit = 100'000;
constexpr std::int64_t k_capture_body_cap = 16ll * 1024 * 1024;
constexpr std::int64_t k_max_count = 1'000'000'000'000'000; // "1000000G": far beyond any provider's limit

std::vector<Setting> make_table() {
  using S = Section;
  using T = SettingType;
  return {
      // [server]
      {"listen", S::server, T::listen, "\"127.0.0.1:8787\"", false,
       "address to listen on; loopback only: 127.0.0.0/8, [::1], localhost", 0, 0,
       apply_member<&ServerSettings::listen>},
      {"client_token", S::server, T::secret, "", true, "optional: clients must present this as their key", 0,
       0, apply_member<&ServerSettings::client_token>},
      {"allowed_origins", S::server, T::string_list, "[]", true,
       "browser Origins allowed to call keyshim (none by default)", 0, 0,
       apply_member<&ServerSettings::allowed_origins>},
      {"max_request_body", S::server, T::size, "\"64MiB\"", true,
       "largest request body in bytes (or \"64MiB\"); larger bodies get 413", 1,
       std::numeric_limits<std::int64_t>::max(), apply_member<&ServerSettings::max_request_body>},
      {"drain_timeout", S::server, T::duration, "\"30s\"", true,
       "how long SIGTERM waits for in-flight responses", 0, 7 * k_day_ms,
       apply_member<&ServerSettings::drain_timeout>},
      {"state", S::server, T::boolean, "true", true,
       "keep cooldowns, disabled keys and today's usage across restarts in "
       "$XDG_STATE_HOME/keyshim/state.json",
       0, 0, apply_member<&ServerSettings::state>},
      {"capture_size", S::server, T::integer, "200", true,
       "how many exchanges the capture ring keeps, dropping the oldest (keyshim log); 0 keeps none", 0,
       k_capture_size_limit, apply_member<&ServerSettings::capture_size>},
      {"capture_body_limit", S::server, T::size, "\"64KiB\"", true,
       "bytes kept of each captured request and response body (or \"64KiB\"); the rest is counted, not kept",
       0, k_capture_body_cap, apply_member<&ServerSettings::capture_body_limit>},
      // [upstream]
      {"base_url", S::upstream, T::url, "\"https://api.openai.com\"", true,
       "where requests go; may carry a path prefix; http:// only to loopback hosts", 0, 0,
       apply_member<&UpstreamSettings::base_url>},
      {"auth", S::upstream, T::auth, "\"bearer\"", true,
       "how the key is sent: bearer | x-api-key | x-goog-api-key | api-key | query:NAME", 0, 0,
       apply_member<&UpstreamSettings::auth>},
      {"strategy", S::upstream, T::strategy, "\"ordered\"", true,
       "key selection: ordered | round-robin | least-recently-used", 0, 0,
       apply_member<&UpstreamSettings::strategy>},
      {"max_attempts", S::upstream, T::integer, "4", true,
       "upstream attempts per request, all keys together (1 to 20)", 1, k_max_attempts_limit,
       apply_member<&UpstreamSettings::max_attempts>},
      {"connect_timeout", S::upstream, T::duration, "\"10s\"", true,
       "longest wait for a connection (and TLS handshake) to the upstream", k_ms, k_day_ms,
       apply_member<&UpstreamSettings::connect_timeout>},
      {"first_byte_timeout", S::upstream, T::duration, "\"10m\"", true,
       "longest wait for the first byte of a response; reasoning models can think for minutes", k_ms,
       k_day_ms, apply_member<&UpstreamSettings::first_byte_timeout>},
      {"idle_timeout", S::upstream, T::duration, "\"5m\"", true, "longest silence once a body is flowing",
       k_ms, k_day_ms, apply_member<&UpstreamSettings::idle_timeout>},
      {"max_cooldown", S::upstream, T::duration, "\"24h\"", true,
       "cap on any cooldown a provider hint asks for", k_ms, 30 * k_day_ms,
       apply_member<&UpstreamSettings::max_cooldown>},
      {"ca_file", S::upstream, T::file, "", true,
       "extra CA certificate (PEM) for TLS upstreams; relative to the pool file's directory", 0, 0,
       apply_member<&UpstreamSettings::ca_file>},
      {"max_wait", S::upstream, T::duration, "\"0s\"", true,
       "when no key is free, how long a request may wait for one (a cooldown ending, a slot freeing) "
       "before its 503",
       0, k_hour_ms, apply_member<&UpstreamSettings::max_wait>},
      {"max_concurrent", S::upstream, T::integer, "", true,
       "requests in flight at once per key; a busy key is skipped (unlimited by default)", 1,
       k_max_concurrent_limit, apply_member<&UpstreamSettings::max_concurrent>},
      {"session_ttl", S::upstream, T::duration, "\"1h\"", true,
       "how long a tool session keeps its key after its last request (prompt caches are per key); "
       "\"0s\" turns session affinity off",
       0, 7 * k_day_ms, apply_member<&UpstreamSettings::session_ttl>},
      {"proxy", S::upstream, T::proxy, "", true,
       "HTTP proxy for every key, http://[user:password@]host[:port]; \"\" for none; unset: "
       "https_proxy / HTTPS_PROXY and no_proxy, as curl reads them, except for loopback upstreams",
       0, 0, apply_member<&UpstreamSettings::proxy>},
      {"models", S::upstream, T::model_patterns, "", true,
       "models the pool's keys serve, as patterns (* any characters, ? one), e.g. [\"gpt-4o*\", "
       "\"o3\"]; a request for another model goes to no such key (every model by default)",
       1, 0, apply_member<&UpstreamSettings::models>},
      {"exclude_models", S::upstream, T::model_patterns, "[]", true,
       "models the pool's keys never serve, as patterns, even when models matches them", 0, 0,
       apply_member<&UpstreamSettings::exclude_models>},
      {"requests_per_minute", S::upstream, T::count, "", true,
       "a limit of your own for each key: requests per clock minute; a key at it is skipped until the "
       "minute ends (none by default)",
       1, k_max_count, apply_member<&UpstreamSettings::requests_per_minute>},
      {"requests_per_day", S::upstream, T::count, "", true,
       "a limit of your own for each key: requests per day (from day_start); a key at it is skipped until "
       "the next day",
       1, k_max_count, apply_member<&UpstreamSettings::requests_per_day>},
      {"tokens_per_minute", S::upstream, T::count, "", true,
       "a limit of your own for each key: input and output tokens per clock minute, as responses report "
       "them; \"200K\"",
       1, k_max_count, apply_member<&UpstreamSettings::tokens_per_minute>},
      {"tokens_per_day", S::upstream, T::count, "", true,
       "a limit of your own for each key: input and output tokens per day (from day_start); \"2M\"", 1,
       k_max_count, apply_member<&UpstreamSettings::tokens_per_day>},
      {"day_start", S::upstream, T::time_of_day, "\"00:00\"", true,
       "when the day of the per-day limits begins, \"HH:MM\" in day_zone", 0, 0,
       apply_member<&UpstreamSettings::day_start>},
      {"day_zone", S::upstream, T::day_zone, "\"local\"", true,
       "the time zone of day_start: local (this machine's) | UTC | an offset such as \"-08:00\"", 0, 0,
       apply_member<&UpstreamSettings::day_zone>},
      {"capture", S::upstream, T::capture, "\"errors\"", true,
       "which exchanges the capture ring keeps, heads and bodies with credentials removed: off | errors "
       "(the client got 400 or more, the answer was cut, or an attempt failed before it) | all",
       0, 0, apply_member<&UpstreamSettings::capture>},
      // [[keys]]
      {"label", S::key, T::label, "", true, "shown in logs and status; defaults to the key's fingerprint", 0,
       0, apply_member<&KeyEntry::label>},
      {"key", S::key, T::secret, "", true, "the key itself; exactly one of key / key_env / key_cmd", 0, 0,
       apply_member<&KeyEntry::key>},
      {"key_env", S::key, T::env_name, "", true, "name of an environment variable holding the key", 0, 0,
       apply_member<&KeyEntry::key_env>},
      {"key_cmd", S::key, T::command, "", true,
       "command (argv, no shell) whose first output line is the key, e.g. [\"pass\", \"show\", \"x\"]", 0, 0,
       apply_member<&KeyEntry::key_cmd>},
      {"key_cmd_refresh", S::key, T::duration, "", true,
       "run key_cmd again this long after each run, for tokens that expire; a token whose JSON output "
       "reports its expiry is refreshed before it anyway",
       k_second_ms, 7 * k_day_ms, apply_member<&KeyEntry::key_cmd_refresh>},
      {"base_url", S::key, T::url, "", true, "per-key override of the pool's base_url", 0, 0,
       apply_member<&KeyEntry::base_url>},
      {"auth", S::key, T::auth, "", true, "per-key override of the pool's auth", 0, 0,
       apply_member<&KeyEntry::auth>},
      {"ca_file", S::key, T::file, "", true, "per-key override of the pool's ca_file", 0, 0,
       apply_member<&KeyEntry::ca_file>},
      {"max_concurrent", S::key, T::integer, "", true, "per-key override of the pool's max_concurrent", 1,
       k_max_concurrent_limit, apply_member<&KeyEntry::max_concurrent>},
      {"models", S::key, T::model_patterns, "", true, "per-key replacement of the pool's models", 1, 0,
       apply_member<&KeyEntry::models>},
      {"exclude_models", S::key, T::model_patterns, "", true,
       "per-key replacement of the pool's exclude_models ([] for none)", 0, 0,
       apply_member<&KeyEntry::exclude_models>},
      {"requests_per_minute", S::key, T::count, "", true,
       "per-key override of the pool's requests_per_minute", 1, k_max_count,
       apply_member<&KeyEntry::requests_per_minute>},
      {"requests_per_day", S::key, T::count, "", true, "per-key override of the pool's requests_per_day", 1,
       k_max_count, apply_member<&KeyEntry::requests_per_day>},
      {"tokens_per_minute", S::key, T::count, "", true, "per-key override of the pool's tokens_per_minute", 1,
       k_max_count, apply_member<&KeyEntry::tokens_per_minute>},
      {"tokens_per_day", S::key, T::count, "", true, "per-key override of the pool's tokens_per_day", 1,
       k_max_count, apply_member<&KeyEntry::tokens_per_day>},
  };
}

} // namespace

const char* to_string(Section section) {
  switch (section) {
  case Section::server:
    return "server";
  case Section::upstream:
    return "upstream";
  case Section::key:
    return "keys";
  }
  return "keys";
}

const std::vector<Setting>& settings_table() {
  static const std::vector<Setting> table = make_table();
  return table;
}

const Setting* find_setting(Section section, std::string_view name) {
  for (const Setting& setting : settings_table()) {
    if (setting.section == section && setting.name == name) {
      return &setting;
    }
  }
  return nullptr;
}

} // namespace keyshim::config
