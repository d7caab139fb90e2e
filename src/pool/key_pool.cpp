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

std::optional<std::size_t> KeyPool::index_of_label(std::string_view label) const {
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    if (m_keys[i].label == label) {
      return i;
    }
  }
  return std::nullopt;
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
  return earliest_available(model, m_clock.now());
}

std::optional<util::TimePoint> KeyPool::earliest_available(const std::string* model,
                                                           util::TimePoint now) const {
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
