#pragma once
// The keys of one pool file and their health. Thread-safe: the event loop
// selects, reports and releases; the reloader thread reads counts and builds
// the next pool, whose kept keys share their health cells with this one; the
// token refresher runs key_cmd keys' commands and the state keeper saves the
// keys' health, each on a thread of its own.
#include "config/config.hpp"
#include "pool/budget.hpp"
#include "pool/model_health.hpp"
#include "pool/quota.hpp"
#include "pool/session_map.hpp"
#include "util/clock.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::pool {

using std::chrono::milliseconds;

enum class KeyState { available, cooling, disabled };
// "available", "cooling", "disabled".
const char* to_string(KeyState state);

// Why an attempt with a key failed, for its usage counts.
enum class FailureClass { rate_limit, auth, quota, server, transport };
inline constexpr std::size_t k_failure_classes = 5;
// "rate_limit", "auth", "quota", "server", "transport".
const char* to_string(FailureClass failure);

// What a key did over some span. In memory only.
struct UsageCounts {
  std::uint64_t requests = 0; // attempts made with the key
  std::array<std::uint64_t, k_failure_classes> failures{};
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::uint64_t bytes = 0; // response body bytes relayed to clients from the commit point on
};

// The latest attempt that went wrong for the key: what `keyshim top` shows
// beside the key, with its time, long after the state it caused has passed.
struct LastError {
  int status = 0;     // 0 for a transport failure
  std::string reason; // the verdict's: "429 Retry-After", "connect timeout"
  util::TimePoint at{};
};

struct KeyHealth {
  KeyState state = KeyState::available; // cooling whose end has passed reads as available
  util::TimePoint until{};              // end of cooling
  std::string reason;                   // why cooling/disabled: "429 Retry-After", "401"
  std::uint64_t ok_count = 0;
  std::uint64_t error_count = 0;
  int consecutive_failures = 0;
  int consecutive_rate_limits = 0;
  int last_status = 0; // 0 = none yet or transport failure
  util::TimePoint last_used{};
  int in_flight = 0;
  int websockets = 0;              // relayed WebSockets open now (they hold no in-flight slot)
  UsageCounts today;               // since local midnight
  UsageCounts total;               // since keyshim started
  UsageCounts replays;             // replays since start (behaviour.md §4.2), not in today or total
  int usage_day = 0;               // the local day `today` counts: year * 1000 + day of the year
  std::vector<ModelHealth> models; // models in trouble on this key
  std::optional<KeyQuota> quota;   // the limits the provider last reported, if it ever did
  // The latest failed attempt, kept after the state it caused has passed.
  std::optional<LastError> last_error;
};

// The failure streaks that set the next backoff: the key's, or one model's on it.
struct Streaks {
  int failures = 0;
  int rate_limits = 0;
};

// What an attempt did to a key's health (the relay maps policy's verdict to it).
enum class Change {
  success, // clears the key's streaks and, with a model, that model's trouble
  failure, // counts toward the failure streak; cools when `cooldown` > 0
  cool,    // cools for `cooldown`, never shortening a longer cooling
  disable, // disabled until a reload brings a new key
  none,    // only the last status changes (a response every key would get)
};

// Whose health a failure or a cooling changes. A request naming no model
// changes the key's whatever the scope.
enum class Scope { key, model };

// One attempt's outcome, for KeyPool::report.
struct Report {
  Change change = Change::none;
  int status = 0; // 0 for a transport failure
  milliseconds cooldown{0};
  bool rate_limited = false; // a cooling that extends the rate-limit streak (429 doubling)
  Scope scope = Scope::key;
  std::string reason;                  // why it cooled or was disabled: "429 Retry-After", "401"
  std::optional<FailureClass> failure; // for the usage counts; nullopt when the key did its job
  std::optional<QuotaReport> quota;    // the rate limits the response reported, if it did
  bool replay = false;                 // a replay's attempt: counted in KeyHealth::replays
};

// A key_cmd key's token, as status shows it (never the token itself).
struct TokenStatus {
  std::optional<util::TimePoint> expires;  // as its command reported it
  std::optional<util::TimePoint> next_run; // when its command runs next, if it is scheduled
  std::uint64_t refreshes = 0;             // runs that gave a token since start (the load's excluded)
  std::string error;                       // why its last run failed; "" after a success
};

struct KeySnapshot {
  std::string label;
  std::string fingerprint;        // of the token in use now (a key_cmd key's may be newer than its file's)
  std::string upstream;           // base_url text
  KeyHealth health;               // a key over one of its own limits reads as cooling until the window ends
  config::ModelFilter models{};   // which models it serves
  std::size_t sessions = 0;       // named sessions bound to the key (SessionMap), used within the ttl
  int max_concurrent = 0;         // 0: unlimited
  std::vector<LimitUse> limits{}; // use against each of its own limits that is set
  std::optional<TokenStatus> token{}; // key_cmd keys only
};

// The secret a request is sent with.
struct SecretInUse {
  std::shared_ptr<const util::Secret> secret; // never null
  std::uint64_t generation = 0;               // a key_cmd key's token generation; 0 for other keys
};

// What one run of a key's command gave (KeyPool::finish_refresh).
struct RefreshResult {
  std::optional<util::Secret> token;
  std::optional<util::TimePoint> expires; // the expiry its output reported
  std::string reason;                     // when no token: why, fit to show (never the token)
};

// What finish_refresh made of it, for the log.
struct RefreshReport {
  bool changed = false;                   // a new token
  std::optional<util::TimePoint> next;    // the next run, if scheduled
  std::optional<util::TimePoint> expires; // of the token in use
  bool cooling = false;                   // no usable token left: cooling until the next run
  std::string reason;                     // a failure's reason as kept: the token shown as its fingerprint
};

struct Counts {
  int total = 0;
  int available = 0;
  int cooling = 0;
  int disabled = 0;
};

struct Selection {
  std::optional<std::size_t> index; // the chosen key, already counted in flight
  std::optional<util::TimePoint>
      earliest_available;     // when nothing is eligible: the first cooldown end, if any
  bool busy = false;          // when nothing is eligible: a key was skipped at its max_concurrent, or
                              // its model is being probed by another request
  bool probe = false;         // the chosen key's model cooldown has ended: this request probes it
  bool over_limits = false;   // when nothing is eligible: a key was skipped at one of its own limits
  bool reached_limit = false; // the chosen key reached one of its own limits with this request
  // KeyPool::key_id of the chosen key, 0 when none.
  std::uint64_t key_id = 0;
};

// The key a request would rather have, because its tool session used it
// last (docs/behaviour.md §4): a named session is looked up and bound in the
// pool's SessionMap; a client connection remembers its key itself.
struct Affinity {
  std::uint64_t session = 0; // the named session's identity; 0: none
  std::uint64_t key = 0;     // else the key_id its connection used last; 0: none
};

// How long a session is remembered unless the pool file says (session_ttl).
inline constexpr milliseconds k_default_session_ttl{3'600'000};

class HealthCell;
struct SavedKey;

class KeyPool {
public:
  KeyPool(std::vector<config::KeyConfig> keys, config::Strategy strategy, util::Clock& clock);
  ~KeyPool();

  // A new pool for a reloaded file. Keys whose fingerprint also exists in
  // `previous` share its health (cooling keeps cooling, disabled stays
  // disabled, in-flight counts continue); new keys start available. A
  // key_cmd key matches by the token it sends now as well, and takes the
  // reload's token and settings.
  static std::shared_ptr<KeyPool> reloaded(const KeyPool& previous, std::vector<config::KeyConfig> keys,
                                           config::Strategy strategy);

  std::size_t size() const;
  const config::KeyConfig& key(std::size_t index) const;
  // The key's identity, unique in the process and kept by a reload that
  // keeps the key: what sessions are bound to. Never 0.
  std::uint64_t key_id(std::size_t index) const;
  // How long an unused session is remembered; zero turns affinity off. The
  // pools a reload builds share their predecessor's sessions.
  void set_session_ttl(milliseconds ttl);

  // Pick an eligible key not marked in `excluded` (indexed like the pool;
  // shorter vectors mean "not excluded") by the pool's strategy, count it in
  // flight and against its own limits, and stamp its last use. A key with
  // max_concurrent requests in flight is not eligible, nor one that does not
  // serve `model` or is cooling for it (when given), nor one whose model is
  // being probed by another request, nor one that reached one of its own
  // limits in the current window. The round-robin cursor moves past the
  // chosen key in the same step. Round-robin and least-recently-used try
  // keys running low on a provider limit last (headroom_tier), in their
  // usual order within a tier. With an `affinity`, the key its session used
  // last is taken first when eligible, and the cursor stays (a pinned
  // session does not push new ones onto a key); otherwise the strategy's
  // choice becomes the named session's key.
  Selection acquire(const std::vector<bool>& excluded, const std::string* model = nullptr,
                    Affinity affinity = {});
  // Take the key `index` for a request that names it (keyshim-key,
  // docs/behaviour.md §4.2): whatever its state, cooling, limits or
  // max_concurrent, counted in flight and against its own limits like any
  // request. Never a probe; the round-robin cursor and sessions stay.
  Selection acquire_pinned(std::size_t index);
  // The index of the key labelled `label`, nullopt when the pool has none.
  std::optional<std::size_t> index_of_label(std::string_view label) const;
  // The request that acquired `index` is done with it; `probed` is the model
  // it was probing (Selection::probe), if any.
  void release(std::size_t index, const std::string* probed = nullptr);

  // One attempt with `index` is over: counts the attempt (and its failure
  // class) and applies the change, under one lock. A success with `model`
  // clears that model's trouble; a failure or cooling scoped to the model
  // changes the pair (key, model), else the key; disable is always the key's.
  // Then the quota the response reported is kept, and a spent one sets the
  // pair (key, model), or the key without a model, aside like a cooling.
  // Returns the streaks of the changed scope after the change, for the log.
  Streaks report(std::size_t index, const std::string* model, const Report& report);
  // The streaks the next backoff grows from: the model's with `model`.
  Streaks streaks(std::size_t index, const std::string* model = nullptr) const;
  // Whether `index` is cooling now, by the pool's clock: for every model, or
  // for `model` (when given). A disabled key is not cooling.
  bool cooling_for(std::size_t index, const std::string* model = nullptr) const;
  // Tokens a response served by the key reported using (a replay's go to
  // KeyHealth::replays; own limits count both). True when they made the key
  // reach one of its own token limits.
  bool count_tokens(std::size_t index, std::uint64_t input, std::uint64_t output, bool replay = false);
  // Body bytes a response served by the key relayed to its client.
  void count_bytes(std::size_t index, std::uint64_t bytes, bool replay = false);
  // Whether some key of the pool serves `model` (its models and
  // exclude_models); true without a model.
  bool serves(const std::string* model) const;
  // A WebSocket the key's handshake opened (+1) has closed (-1).
  void count_websocket(std::size_t index, int change);

  // Every key's health as a restart keeps it, in pool order.
  std::vector<SavedKey> save() const;
  // Give keys back what `saved` holds for their fingerprint (pool/saved_health.hpp);
  // a cooling is cut to `cap` (the pool's max_cooldown). Returns how many keys
  // took something back. Call before the pool serves a request.
  std::size_t restore(const std::vector<SavedKey>& saved, milliseconds cap);

  // ---- key_cmd keys' tokens (pool/credential.hpp). Other keys send their
  // configured secret, unchanged until a reload.
  // The secret a request with `index` sends now: cheap, and lock-free for a
  // key without a command.
  SecretInUse secret(std::size_t index) const;
  // The fingerprint of that secret.
  std::string fingerprint(std::size_t index) const;
  // A 401 answered the token of `generation`: true for a key_cmd key, whose
  // token is no longer sent and whose command runs (or ran already) for a
  // new one; false for other keys.
  bool reject_secret(std::size_t index, std::uint64_t generation);
  // The key has no token to send now and waits for its command's run (it is
  // not cooling: that run has not failed).
  bool awaiting_secret(std::size_t index) const;
  // For the thread that runs the commands: the command of `index` when a run
  // is due now, which is then running until finish_refresh.
  std::optional<std::vector<std::string>> begin_refresh(std::size_t index);
  // The run began with begin_refresh ended. A token replaces the one in use
  // (requests already sent keep theirs); a failure leaves the key cooling
  // with `reason` until the next run when it has no valid token left.
  RefreshReport finish_refresh(std::size_t index, RefreshResult result);
  // When the next run of any key's command is due, if one is scheduled.
  std::optional<util::TimePoint> next_refresh() const;
  // Changes whenever a key_cmd token changes, in any pool (pool::token_epoch).
  static std::uint64_t token_epoch();

  KeyHealth health(std::size_t index) const;
  // The use against each of the key's own limits that is set.
  std::vector<LimitUse> limits(std::size_t index) const;
  std::vector<KeySnapshot> snapshot() const;
  Counts counts() const;
  // Earliest time a key that is not disabled may serve again: the end of its
  // cooling, of `model`'s cooling on it, or of the window of an own limit it
  // reached, whichever is latest (for waiting and the 503's Retry-After);
  // with `model`, only among the keys that serve it.
  std::optional<util::TimePoint> earliest_available(const std::string* model = nullptr) const;
  // The same at `now`: a search that found no key asks at its own instant,
  // or a cooldown ending between the two would leave it no key and no end.
  std::optional<util::TimePoint> earliest_available(const std::string* model, util::TimePoint now) const;

private:
  // acquire's steps (pool/key_pool_selection.cpp).
  struct Search;
  std::optional<std::size_t> take_preferred(const std::vector<bool>& excluded, const Affinity& affinity,
                                            Search& search);
  std::optional<std::size_t> take_by_strategy(const std::vector<bool>& excluded, Search& search);
  Selection selected(std::size_t index, const Search& search) const;
  Selection nothing_eligible(const Search& search) const;
  std::vector<std::size_t> candidates(const std::vector<bool>& excluded) const;
  void prefer_headroom(std::vector<std::size_t>& order, util::TimePoint now) const;
  std::optional<std::size_t> take_first(const std::vector<std::size_t>& candidates, Search& search);
  bool try_take(std::size_t index, Search& search);

  // key_cmd keys' tokens (pool/key_pool_tokens.cpp).
  void carry_token(std::size_t index);
  std::optional<TokenStatus> token_status(std::size_t index) const;

  std::optional<std::size_t> index_of(std::uint64_t key_id) const;

  std::vector<config::KeyConfig> m_keys;
  std::vector<std::shared_ptr<HealthCell>> m_cells;
  config::Strategy m_strategy;
  bool m_models_restricted = false; // some key serves only some models
  util::Clock& m_clock;
  mutable std::mutex m_cursor_mutex;
  std::size_t m_cursor = 0;
  std::shared_ptr<SessionMap> m_sessions; // shared with the pools reloads make from this one
};

} // namespace keyshim::pool
