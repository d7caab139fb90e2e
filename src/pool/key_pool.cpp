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
    : m_keys(std::move(keys)), m_strategy(strategy), m_clock(clock) {
  m_cells.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    m_cells.push_back(std::make_shared<HealthCell>());
  }
}

KeyPool::~KeyPool() = default;

std::shared_ptr<KeyPool> KeyPool::reloaded(const KeyPool& previous, std::vector<config::KeyConfig> keys,
                                           config::Strategy strategy) {
  auto pool = std::make_shared<KeyPool>(std::move(keys), strategy, previous.m_clock);
  // Each previous cell goes to at most one new key, so a file that lists the
  // same key twice does not make two entries share one in-flight count.
  std::vector<bool> taken(previous.m_keys.size(), false);
  for (std::size_t i = 0; i < pool->m_keys.size(); ++i) {
    const std::string& fingerprint = pool->m_keys[i].secret.fingerprint();
    for (std::size_t j = 0; j < previous.m_keys.size(); ++j) {
      if (!taken[j] && previous.m_keys[j].secret.fingerprint() == fingerprint) {
        pool->m_cells[i] = previous.m_cells[j];
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

// What one acquire looks for, and what it learns on the way.
struct KeyPool::Search {
  util::TimePoint now;
  const std::string* model = nullptr;
  bool busy = false;          // a key was skipped at its max_concurrent or for its model's probe
  bool probe = false;         // the chosen key probes `model`
  bool over_limits = false;   // a key was skipped at one of its own limits
  bool reached_limit = false; // the chosen key reached one with this request
};

Selection KeyPool::acquire(const std::vector<bool>& excluded, const std::string* model) {
  // Only the event loop selects today; the lock (uncontended, so nearly
  // free) keeps acquire safe from any thread all the same: the round-robin
  // cursor moves past the chosen key in the same critical section that
  // chooses it.
  std::lock_guard select_lock(m_cursor_mutex);
  Search search;
  search.now = m_clock.now();
  search.model = model;
  std::optional<std::size_t> chosen = take_first(candidates(excluded), search);
  if (chosen && m_strategy == config::Strategy::round_robin) {
    m_cursor = (*chosen + 1) % m_keys.size();
  }
  Selection selection;
  selection.index = chosen;
  selection.probe = chosen && search.probe;
  selection.reached_limit = chosen && search.reached_limit;
  if (!chosen) {
    selection.earliest_available = earliest_available(model);
    selection.busy = search.busy;
    selection.over_limits = search.over_limits;
  }
  return selection;
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

bool KeyPool::count_tokens(std::size_t index, std::uint64_t input, std::uint64_t output) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  const util::TimePoint now = m_clock.now();
  for (UsageCounts* counts : {&cell.today(now), &cell.health.total}) {
    util::add_saturating(counts->input_tokens, input);
    util::add_saturating(counts->output_tokens, output);
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

void KeyPool::count_bytes(std::size_t index, std::uint64_t bytes) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  for (UsageCounts* counts : {&cell.today(m_clock.now()), &cell.health.total}) {
    util::add_saturating(counts->bytes, bytes);
  }
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
  std::vector<KeySnapshot> out;
  out.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    const config::KeyConfig& key = m_keys[i];
    out.push_back(
        KeySnapshot{key.label, key.secret.fingerprint(), key.base_url.text(), health(i), limits(i)});
  }
  return out;
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
