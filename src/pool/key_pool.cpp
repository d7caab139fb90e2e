#include "pool/key_pool.hpp"

#include <algorithm>
#include <ctime>

namespace keyshim::pool {

// One key's health. A cell outlives its pool when a reload keeps the key:
// the new pool shares it, so health and in-flight counts carry over, and
// requests still holding the old pool release into the same cell.
struct KeyPool::Cell {
  mutable std::mutex mutex;
  KeyHealth health;
  ModelTable models;

  // A cooldown that has ended reads, and from now on is, available.
  void expire(util::TimePoint now) {
    if (health.state == KeyState::cooling && health.until <= now) {
      health.state = KeyState::available;
      health.until = {};
      health.reason.clear();
    }
  }

  // Cooling until now + cooldown, never shortening a longer cooling and
  // never waking a disabled key.
  void cool(util::TimePoint now, milliseconds cooldown, const std::string& reason) {
    expire(now);
    if (health.state == KeyState::disabled) {
      return;
    }
    util::TimePoint until = now + cooldown;
    if (health.state == KeyState::cooling && health.until >= until) {
      return;
    }
    health.state = KeyState::cooling;
    health.until = until;
    health.reason = reason;
  }

  // When a request for `model` (nullptr: any model) can next use this key
  // because a cooldown ends: the key's own, or else the model's on it.
  // nullopt when no cooldown stands in the way (or the key is disabled).
  std::optional<util::TimePoint> cooling_end(util::TimePoint now, const std::string* model) {
    expire(now);
    if (health.state == KeyState::cooling) {
      return health.until;
    }
    const ModelHealth* entry = model != nullptr ? models.find(*model) : nullptr;
    if (health.state == KeyState::available && entry != nullptr && entry->cooling(now)) {
      return entry->until;
    }
    return std::nullopt;
  }

  // `today` as of `now`: a new local day starts from zero.
  UsageCounts& today(util::TimePoint now) {
    std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm local{};
    localtime_r(&seconds, &local);
    int day = (local.tm_year + 1900) * 1000 + local.tm_yday;
    if (health.usage_day != day) {
      health.usage_day = day;
      health.today = {};
    }
    return health.today;
  }
};

namespace {

// A model cooling on one key until now + cooldown, never shortening a longer one.
void cool_model(ModelHealth& entry, util::TimePoint now, milliseconds cooldown, const std::string& reason) {
  util::TimePoint until = now + cooldown;
  if (entry.cooling(now) && entry.until >= until) {
    return;
  }
  entry.cooled = true;
  entry.until = until;
  entry.reason = reason;
}

} // namespace

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
    m_cells.push_back(std::make_shared<Cell>());
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

Selection KeyPool::acquire(const std::vector<bool>& excluded, const std::string* model) {
  const util::TimePoint now = m_clock.now();
  const std::size_t count = m_keys.size();
  auto is_excluded = [&](std::size_t i) { return i < excluded.size() && excluded[i]; };

  // Selection is serialised per pool. Round-robin needs it: the cursor is
  // reserved (advanced past the chosen key) in the same critical section
  // that chooses, so N concurrent callers land on N different keys instead
  // of all reading the same cursor and piling onto one key. The other
  // strategies get a consistent view of last_used for the same reason.
  std::lock_guard select_lock(m_cursor_mutex);

  // Check eligibility and take the key under its cell lock in one step, so a
  // key that starts cooling concurrently is never handed out afterwards.
  bool busy = false;
  bool probe = false;
  auto try_take = [&](std::size_t i) {
    Cell& cell = *m_cells[i];
    std::lock_guard lock(cell.mutex);
    cell.expire(now);
    if (cell.health.state != KeyState::available) {
      return false;
    }
    if (int limit = m_keys[i].max_concurrent; limit > 0 && cell.health.in_flight >= limit) {
      busy = true;
      return false;
    }
    if (model != nullptr) {
      const ModelHealth* entry = cell.models.find(*model);
      if (entry != nullptr && entry->probing && !entry->cooling(now)) {
        busy = true; // the probe ends soon, one way or the other
        return false;
      }
      ModelAccess access = cell.models.access(*model, now);
      if (access == ModelAccess::closed) {
        return false;
      }
      probe = access == ModelAccess::probe;
    }
    ++cell.health.in_flight;
    cell.health.last_used = now;
    return true;
  };

  std::optional<std::size_t> chosen;
  switch (m_strategy) {
  case config::Strategy::ordered:
    for (std::size_t i = 0; i < count && !chosen; ++i) {
      if (!is_excluded(i) && try_take(i)) {
        chosen = i;
      }
    }
    break;
  case config::Strategy::round_robin:
    for (std::size_t step = 0; step < count && !chosen; ++step) {
      std::size_t i = (m_cursor + step) % count;
      if (!is_excluded(i) && try_take(i)) {
        chosen = i;
        m_cursor = (i + 1) % count;
      }
    }
    break;
  case config::Strategy::least_recently_used: {
    // Candidates by last use, oldest first; ties keep file order.
    std::vector<std::pair<util::TimePoint, std::size_t>> order;
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_excluded(i)) {
        std::lock_guard lock(m_cells[i]->mutex);
        order.emplace_back(m_cells[i]->health.last_used, i);
      }
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& candidate : order) {
      if (try_take(candidate.second)) {
        chosen = candidate.second;
        break;
      }
    }
    break;
  }
  }

  Selection selection;
  selection.index = chosen;
  selection.probe = chosen && probe;
  if (!chosen) {
    selection.earliest_available = earliest_available(model);
    selection.busy = busy;
  }
  return selection;
}

void KeyPool::release(std::size_t index, const std::string* probed) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  if (cell.health.in_flight > 0) {
    --cell.health.in_flight;
  }
  if (probed != nullptr) {
    cell.models.end_probe(*probed);
  }
}

void KeyPool::record_success(std::size_t index, int status, const std::string* model) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.ok_count++;
  cell.health.consecutive_failures = 0;
  cell.health.consecutive_rate_limits = 0;
  cell.health.last_status = status;
  if (model != nullptr) {
    cell.models.erase(*model);
  }
}

void KeyPool::record_failure(std::size_t index, int status, milliseconds cooldown, const std::string& reason,
                             const std::string* model) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.error_count++;
  cell.health.last_status = status;
  if (model != nullptr) {
    ModelHealth& entry = cell.models.get(*model, m_clock.now());
    entry.consecutive_failures++;
    entry.probing = false;
    if (cooldown > milliseconds(0)) {
      cool_model(entry, m_clock.now(), cooldown, reason);
    }
    return;
  }
  cell.health.consecutive_failures++;
  if (cooldown > milliseconds(0)) {
    cell.cool(m_clock.now(), cooldown, reason);
  }
}

void KeyPool::record_cooldown(std::size_t index, int status, milliseconds cooldown, bool rate_limited,
                              const std::string& reason, const std::string* model) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.error_count++;
  cell.health.last_status = status;
  if (model != nullptr) {
    ModelHealth& entry = cell.models.get(*model, m_clock.now());
    entry.consecutive_rate_limits += rate_limited ? 1 : 0;
    entry.probing = false;
    cool_model(entry, m_clock.now(), cooldown, reason);
    return;
  }
  if (rate_limited) {
    cell.health.consecutive_rate_limits++;
  }
  cell.cool(m_clock.now(), cooldown, reason);
}

Streaks KeyPool::streaks(std::size_t index, const std::string* model) const {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  if (model == nullptr) {
    return {cell.health.consecutive_failures, cell.health.consecutive_rate_limits};
  }
  const ModelHealth* entry = cell.models.find(*model);
  return entry ? Streaks{entry->consecutive_failures, entry->consecutive_rate_limits} : Streaks{};
}

void KeyPool::record_disable(std::size_t index, int status, const std::string& reason) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.error_count++;
  cell.health.last_status = status;
  cell.health.state = KeyState::disabled;
  cell.health.until = {};
  cell.health.reason = reason;
}

void KeyPool::record_neutral(std::size_t index, int status) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  cell.health.last_status = status;
}

void KeyPool::count_attempt(std::size_t index, std::optional<FailureClass> failure) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  for (UsageCounts* counts : {&cell.today(m_clock.now()), &cell.health.total}) {
    counts->requests++;
    if (failure) {
      counts->failures.at(static_cast<std::size_t>(*failure))++;
    }
  }
}

void KeyPool::count_tokens(std::size_t index, std::uint64_t input, std::uint64_t output) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  for (UsageCounts* counts : {&cell.today(m_clock.now()), &cell.health.total}) {
    counts->input_tokens += input;
    counts->output_tokens += output;
  }
}

void KeyPool::count_bytes(std::size_t index, std::uint64_t bytes) {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  for (UsageCounts* counts : {&cell.today(m_clock.now()), &cell.health.total}) {
    counts->bytes += bytes;
  }
}

KeyHealth KeyPool::health(std::size_t index) const {
  Cell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  util::TimePoint now = m_clock.now();
  cell.expire(now);
  cell.today(now);
  KeyHealth health = cell.health;
  health.models = cell.models.entries();
  return health;
}

std::vector<KeySnapshot> KeyPool::snapshot() const {
  std::vector<KeySnapshot> out;
  out.reserve(m_keys.size());
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    const config::KeyConfig& key = m_keys[i];
    out.push_back(KeySnapshot{key.label, key.secret.fingerprint(), key.base_url.text(), health(i)});
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
    Cell& cell = *m_cells[i];
    std::lock_guard lock(cell.mutex);
    std::optional<util::TimePoint> end = cell.cooling_end(now, model);
    if (end && (!earliest || *end < *earliest)) {
      earliest = end;
    }
  }
  return earliest;
}

} // namespace keyshim::pool
