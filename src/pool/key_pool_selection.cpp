// Key selection: which key a request gets (acquire), in what order the
// strategies try the keys, and the one step that checks a key and takes it;
// and the key a request names itself (acquire_pinned).
#include "pool/key_pool.hpp"

#include "pool/health_cell.hpp"

#include <algorithm>

namespace keyshim::pool {

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
  // Only the event loop selects; the lock (uncontended, so nearly free)
  // keeps acquire safe from any thread all the same: the round-robin cursor
  // moves past the chosen key in the same critical section that chooses it.
  std::lock_guard select_lock(m_cursor_mutex);
  Search search;
  search.now = m_clock.now();
  search.model = model;
  // A session's own key leaves the cursor where it is: the cursor spreads
  // the sessions that choose, and one that keeps its key chooses nothing.
  if (std::optional<std::size_t> kept = take_preferred(excluded, affinity, search)) {
    return selected(*kept, search);
  }
  std::optional<std::size_t> chosen = take_by_strategy(excluded, search);
  if (!chosen) {
    return nothing_eligible(search);
  }
  if (affinity.session != 0) {
    m_sessions->bind(affinity.session, key_id(*chosen), search.now);
  }
  return selected(*chosen, search);
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

// The first eligible key in the strategy's order; round-robin's cursor moves
// past it.
std::optional<std::size_t> KeyPool::take_by_strategy(const std::vector<bool>& excluded, Search& search) {
  std::vector<std::size_t> order = candidates(excluded);
  if (m_strategy != config::Strategy::ordered) {
    prefer_headroom(order, search.now);
  }
  std::optional<std::size_t> chosen = take_first(order, search);
  if (chosen && m_strategy == config::Strategy::round_robin) {
    m_cursor = (*chosen + 1) % m_keys.size();
  }
  return chosen;
}

// The key `index` was taken (try_take counted it in flight).
Selection KeyPool::selected(std::size_t index, const Search& search) const {
  Selection selection;
  selection.index = index;
  selection.probe = search.probe;
  selection.key_id = key_id(index);
  selection.reached_limit = search.reached_limit;
  return selection;
}

// No key was eligible: when one may be, and what the search skipped keys for.
Selection KeyPool::nothing_eligible(const Search& search) const {
  Selection selection;
  selection.earliest_available = earliest_available(search.model, search.now);
  selection.busy = search.busy;
  selection.over_limits = search.over_limits;
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

} // namespace keyshim::pool
