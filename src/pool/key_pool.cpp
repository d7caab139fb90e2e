#include "pool/key_pool.hpp"

#include "pool/health_cell.hpp"
#include "util/saturating.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::pool {

const char* to_string(FailureClass failure) {
  switch (failure) {
  case FailureClass::rate_limit:
    return "rate_limit";
  case FailureClass::auth:
    return "auth";
  case FailureClass::quota:
    return "quota";
  case FailureClass::server:
    return "server";
  case FailureClass::transport:
    return "transport";
  }
  return "transport";
}

const char* to_string(KeyState state) {
  switch (state) {
  case KeyState::available:
    return "available";
  case KeyState::cooling:
    return "cooling";
  case KeyState::disabled:
    return "disabled";
  }
  return "available";
}

KeyPool::KeyPool(std::vector<config::KeyConfig> keys, config::Strategy strategy, util::Clock& clock)
    : m_keys(std::move(keys)), m_strategy(strategy), m_clock(clock),
      m_sessions(std::make_shared<SessionMap>(k_default_session_ttl)) {
  m_cells.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    m_cells.push_back(std::make_shared<HealthCell>());
    if (const std::optional<config::KeyCommand>& command = m_keys[i].command) {
      m_cells.back()->credential.emplace(m_keys[i].secret, *command, m_clock.now());
    }
  }
  m_models_restricted = std::any_of(m_keys.begin(), m_keys.end(),
                                    [](const config::KeyConfig& key) { return key.models.restricted(); });
}

KeyPool::~KeyPool() = default;

std::shared_ptr<KeyPool> KeyPool::reloaded(const KeyPool& previous, std::vector<config::KeyConfig> keys,
                                           config::Strategy strategy) {
  auto pool = std::make_shared<KeyPool>(std::move(keys), strategy, previous.m_clock);
  // Sessions follow their keys: a kept key keeps its cell and so its id.
  pool->m_sessions = previous.m_sessions;
  // Each previous cell goes to at most one new key, so a file that lists the
  // same key twice does not make two entries share one in-flight count.
  std::vector<bool> taken(previous.m_keys.size(), false);
  for (std::size_t i = 0; i < pool->m_keys.size(); ++i) {
    const std::string& fingerprint = pool->m_keys[i].secret.fingerprint();
    for (std::size_t j = 0; j < previous.m_keys.size(); ++j) {
      // A key_cmd key may send a newer token than the one it was loaded with.
      bool same = previous.m_keys[j].secret.fingerprint() == fingerprint ||
                  (previous.m_keys[j].command && previous.fingerprint(j) == fingerprint);
      if (!taken[j] && same) {
        pool->m_cells[i] = previous.m_cells[j];
        pool->carry_token(i);
        taken[j] = true;
        break;
      }
    }
  }
  return pool;
}

std::size_t KeyPool::size() const {
  return m_keys.size();
}

const config::KeyConfig& KeyPool::key(std::size_t index) const {
  return m_keys.at(index);
}

std::uint64_t KeyPool::key_id(std::size_t index) const {
  return m_cells.at(index)->id;
}

void KeyPool::set_session_ttl(milliseconds ttl) {
  m_sessions->set_ttl(ttl);
}

// What one acquire looks for, and what it learns on the way.
struct KeyPool::Search {
  util::TimePoint now;
  const std::string* model = nullptr;
  bool busy = false;          // a key was skipped at its max_concurrent or for its model's probe
  bool probe = false;         // the chosen key probes `model`
  bool over_limits = false;   // a key was skipped at one of its own limits
  bool reached_limit = false; // the chosen key reached one with this request
};

Selection KeyPool::acquire(const std::vector<bool>& excluded, const std::string* model, Affinity affinity) {
  // Only the event loop selects today; the lock (uncontended, so nearly
  // free) keeps acquire safe from any thread all the same: the round-robin
  // cursor moves past the chosen key in the same critical section that
  // chooses it.
  std::lock_guard select_lock(m_cursor_mutex);
  Search search;
  search.now = m_clock.now();
  search.model = model;
  // A session's own key leaves the cursor where it is: the cursor spreads
  // the sessions that choose, and one that keeps its key chooses nothing.
  std::optional<std::size_t> chosen = take_preferred(excluded, affinity, search);
  if (!chosen) {
    std::vector<std::size_t> order = candidates(excluded);
    if (m_strategy != config::Strategy::ordered) {
      prefer_headroom(order, search.now);
    }
    chosen = take_first(order, search);
    if (chosen && m_strategy == config::Strategy::round_robin) {
      m_cursor = (*chosen + 1) % m_keys.size();
    }
    if (chosen && affinity.session != 0) {
      m_sessions->bind(affinity.session, key_id(*chosen), search.now);
    }
  }
  Selection selection;
  selection.index = chosen;
  selection.probe = chosen && search.probe;
  selection.key_id = chosen ? key_id(*chosen) : 0;
  selection.reached_limit = chosen && search.reached_limit;
  if (!chosen) {
    selection.earliest_available = earliest_available(model);
    selection.busy = search.busy;
    selection.over_limits = search.over_limits;
  }
  return selection;
}

// The key the request's session used last, taken when it is still eligible
// (not excluded, cooling, disabled or at max_concurrent). A session whose
// key is not eligible is served by the strategy and moves to its choice.
std::optional<std::size_t> KeyPool::take_preferred(const std::vector<bool>& excluded,
                                                   const Affinity& affinity, Search& search) {
  std::optional<std::uint64_t> wanted;
  if (affinity.session != 0) {
    wanted = m_sessions->find(affinity.session, search.now);
  } else if (affinity.key != 0 && m_sessions->enabled()) {
    wanted = affinity.key;
  }
  std::optional<std::size_t> index = wanted ? index_of(*wanted) : std::nullopt;
  if (!index || (*index < excluded.size() && excluded[*index]) || !try_take(*index, search)) {
    return std::nullopt;
  }
  return index;
}

// A key gone from the file (or a connection's key of another pool) is no
// key of this pool.
std::optional<std::size_t> KeyPool::index_of(std::uint64_t key_id) const {
  for (std::size_t i = 0; i < m_cells.size(); ++i) {
    if (m_cells[i]->id == key_id) {
      return i;
    }
  }
  return std::nullopt;
}

// The keys not excluded, in the order the strategy tries them.
std::vector<std::size_t> KeyPool::candidates(const std::vector<bool>& excluded) const {
  const std::size_t count = m_keys.size();
  auto is_excluded = [&](std::size_t i) { return i < excluded.size() && excluded[i]; };
  std::vector<std::size_t> order;
  order.reserve(count);
  const std::size_t start = m_strategy == config::Strategy::round_robin ? m_cursor : 0;
  for (std::size_t step = 0; step < count; ++step) {
    if (std::size_t i = (start + step) % count; !is_excluded(i)) {
      order.push_back(i);
    }
  }
  if (m_strategy == config::Strategy::least_recently_used) {
    // Oldest last use first; ties keep file order.
    std::vector<util::TimePoint> last_used(count);
    for (std::size_t i : order) {
      std::lock_guard lock(m_cells[i]->mutex);
      last_used[i] = m_cells[i]->health.last_used;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return last_used[a] < last_used[b]; });
  }
  return order;
}

// Keys running low on a limit their provider reported go after the others,
// in tiers (pool/quota.hpp), each tier in the strategy's order. Tiers, not
// a sort by the share left: between keys with plenty left the strategy
// still spreads the load, and a key without figures is as good as one with
// plenty. A key whose provider never reported figures costs no lock here,
// and the tiers are stored only once some key is low.
void KeyPool::prefer_headroom(std::vector<std::size_t>& order, util::TimePoint now) const {
  std::vector<int> tiers;
  for (std::size_t i : order) {
    HealthCell& cell = *m_cells[i];
    if (!cell.quota_seen.load(std::memory_order_relaxed)) {
      continue;
    }
    int tier = 0;
    {
      std::lock_guard lock(cell.mutex);
      tier = cell.health.quota ? headroom_tier(*cell.health.quota, now) : 0;
    }
    if (tier > 0) {
      tiers.resize(m_keys.size(), 0);
      tiers[i] = tier;
    }
  }
  if (!tiers.empty()) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return tiers[a] < tiers[b]; });
  }
}

std::optional<std::size_t> KeyPool::take_first(const std::vector<std::size_t>& candidates, Search& search) {
  for (std::size_t i : candidates) {
    if (try_take(i, search)) {
      return i;
    }
  }
  return std::nullopt;
}

// Eligibility is checked and the key taken under its cell lock in one step,
// so both see the same state of the key.
bool KeyPool::try_take(std::size_t index, Search& search) {
  if (m_models_restricted && search.model != nullptr && !m_keys[index].models.serves(*search.model)) {
    return false; // never offered a model it does not serve, whatever its health
  }
  HealthCell& cell = *m_cells[index];
  std::lock_guard lock(cell.mutex);
  const config::Limits& limits = m_keys[index].limits;
  const bool limited = limits.any(); // a key without limits costs no counting
  if (limited && cell.over_limits(search.now, limits)) {
    search.over_limits = true;
    return false;
  }
  switch (cell.admit(search.now, m_keys[index].max_concurrent, search.model)) {
  case Admission::ineligible:
    return false;
  case Admission::busy:
    search.busy = true;
    return false;
  case Admission::probe:
    search.probe = true;
    break;
  case Admission::taken:
    break;
  }
  // A request counts against the limits when it takes the key: every
  // attempt is one the provider sees.
  if (limited) {
    cell.budget.count_request(search.now, limits);
    search.reached_limit = cell.budget.blocked_until(search.now, limits).has_value();
  }
  return true;
}

// The user named the key: its health does not stand in the way (the
// outcome is still reported like any attempt's), and neither does the
// strategy, so the cursor and the sessions are left alone.
Selection KeyPool::acquire_pinned(std::size_t index) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  const util::TimePoint now = m_clock.now();
  cell.expire(now);
  ++cell.health.in_flight;
  cell.health.last_used = now;
  Selection selection;
  selection.index = index;
  selection.key_id = cell.id;
  const config::Limits& limits = m_keys[index].limits;
  if (limits.any()) {
    const bool before = cell.budget.blocked_until(now, limits).has_value();
    cell.budget.count_request(now, limits);
    selection.reached_limit = !before && cell.budget.blocked_until(now, limits).has_value();
  }
  return selection;
}

std::optional<std::size_t> KeyPool::index_of_label(std::string_view label) const {
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    if (m_keys[i].label == label) {
      return i;
    }
  }
  return std::nullopt;
}

void KeyPool::release(std::size_t index, const std::string* probed) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  if (cell.health.in_flight > 0) {
    --cell.health.in_flight;
  }
  if (probed != nullptr) {
    cell.models.end_probe(*probed);
  }
}

Streaks KeyPool::report(std::size_t index, const std::string* model, const Report& report) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  return cell.apply(m_clock.now(), model, report);
}

Streaks KeyPool::streaks(std::size_t index, const std::string* model) const {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  return cell.streaks(model);
}

bool KeyPool::cooling_for(std::size_t index, const std::string* model) const {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  return cell.cooling_end(m_clock.now(), model).has_value();
}

bool KeyPool::count_tokens(std::size_t index, std::uint64_t input, std::uint64_t output, bool replay) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  const util::TimePoint now = m_clock.now();
  for (UsageCounts* counts : cell.usage_for(now, replay)) {
    if (counts != nullptr) {
      util::add_saturating(counts->input_tokens, input);
      util::add_saturating(counts->output_tokens, output);
    }
  }
  const config::Limits& limits = m_keys.at(index).limits;
  if (!limits.any()) {
    return false;
  }
  std::uint64_t tokens = input;
  util::add_saturating(tokens, output);
  const bool before = cell.budget.blocked_until(now, limits).has_value();
  cell.budget.count_tokens(now, limits, tokens);
  return !before && cell.budget.blocked_until(now, limits).has_value();
}

void KeyPool::count_bytes(std::size_t index, std::uint64_t bytes, bool replay) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  for (UsageCounts* counts : cell.usage_for(m_clock.now(), replay)) {
    if (counts != nullptr) {
      util::add_saturating(counts->bytes, bytes);
    }
  }
}

bool KeyPool::serves(const std::string* model) const {
  if (model == nullptr || !m_models_restricted) {
    return true;
  }
  return std::any_of(m_keys.begin(), m_keys.end(),
                     [&](const config::KeyConfig& key) { return key.models.serves(*model); });
}

void KeyPool::count_websocket(std::size_t index, int change) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.websockets = std::max(0, cell.health.websockets + change);
}

KeyHealth KeyPool::health(std::size_t index) const {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  util::TimePoint now = m_clock.now();
  cell.expire(now);
  cell.today(now);
  KeyHealth health = cell.health;
  health.models = cell.models.entries();
  // A key at one of its own limits is out of use until the window ends, as
  // a cooling key is until its cooldown ends: status, /health and /metrics
  // say so the same way.
  if (health.state == KeyState::available) {
    for (const LimitUse& use : cell.budget.uses(now, m_keys[index].limits)) {
      if (use.used >= use.limit && health.until < use.resets) {
        health.state = KeyState::cooling;
        health.until = use.resets;
        health.reason = fmt::format("own limit: {} {}/{} per {}", use.what, use.used, use.limit, use.per);
      }
    }
  }
  return health;
}

std::vector<LimitUse> KeyPool::limits(std::size_t index) const {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  return cell.budget.uses(m_clock.now(), m_keys[index].limits);
}

std::vector<KeySnapshot> KeyPool::snapshot() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(m_cells.size());
  for (const std::shared_ptr<HealthCell>& cell : m_cells) {
    ids.push_back(cell->id);
  }
  std::vector<std::size_t> sessions = m_sessions->count(ids, m_clock.now());
  std::vector<KeySnapshot> out;
  out.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    const config::KeyConfig& key = m_keys[i];
    out.push_back(KeySnapshot{key.label, fingerprint(i), key.base_url.text(), health(i), key.models,
                              sessions[i], key.max_concurrent, limits(i), token_status(i)});
  }
  return out;
}

std::vector<SavedKey> KeyPool::save() const {
  const util::TimePoint now = m_clock.now();
  std::vector<SavedKey> out;
  out.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    HealthCell& cell = *m_cells[i];
    std::lock_guard lock(cell.mutex);
    out.push_back(cell.save(now));
    // A key_cmd key's by the token it sends now: gcloud and az hand that
    // same token to the restart's run while it is good.
    out.back().fingerprint =
        cell.credential ? cell.credential->token()->fingerprint() : m_keys[i].secret.fingerprint();
  }
  for (const SessionMap::Saved& session : m_sessions->live(now)) {
    if (std::optional<std::size_t> index = index_of(session.key)) {
      out[*index].sessions.push_back(SavedSession{session.session, session.last_use});
    }
  }
  return out;
}

std::size_t KeyPool::restore(const std::vector<SavedKey>& saved, milliseconds cap) {
  const util::TimePoint now = m_clock.now();
  std::size_t restored = 0;
  std::vector<SessionMap::Saved> sessions;
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    auto match = std::find_if(saved.begin(), saved.end(), [&](const SavedKey& key) {
      return key.fingerprint == m_keys[i].secret.fingerprint();
    });
    if (match == saved.end()) {
      continue;
    }
    {
      HealthCell& cell = *m_cells[i];
      std::lock_guard lock(cell.mutex);
      cell.restore(*match, now, cap);
    }
    for (const SavedSession& session : match->sessions) {
      sessions.push_back(SessionMap::Saved{session.session, key_id(i), session.last_use});
    }
    ++restored;
  }
  m_sessions->restore(std::move(sessions), now);
  return restored;
}

Counts KeyPool::counts() const {
  Counts counts;
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    counts.total++;
    switch (health(i).state) {
    case KeyState::available:
      counts.available++;
      break;
    case KeyState::cooling:
      counts.cooling++;
      break;
    case KeyState::disabled:
      counts.disabled++;
      break;
    }
  }
  return counts;
}

std::optional<util::TimePoint> KeyPool::earliest_available(const std::string* model) const {
  const util::TimePoint now = m_clock.now();
  std::optional<util::TimePoint> earliest;
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    if (model != nullptr && !m_keys[i].models.serves(*model)) {
      continue; // its cooldown ending frees nothing for this model
    }
    HealthCell& cell = *m_cells[i];
    std::lock_guard lock(cell.mutex);
    std::optional<util::TimePoint> end = cell.available_again(now, model, m_keys[i].limits);
    if (end && (!earliest || *end < *earliest)) {
      earliest = end;
    }
  }
  return earliest;
}

} // namespace keyshim::pool
