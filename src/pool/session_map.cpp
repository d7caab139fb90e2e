#include "pool/session_map.hpp"

#include <algorithm>

namespace keyshim::pool {

SessionMap::SessionMap(std::chrono::milliseconds ttl, std::size_t capacity)
    : m_ttl(ttl), m_capacity(capacity) {
}

void SessionMap::set_ttl(std::chrono::milliseconds ttl) {
  std::lock_guard lock(m_mutex);
  m_ttl = ttl;
  if (ttl.count() <= 0) {
    m_order.clear();
    m_index.clear();
  }
}

bool SessionMap::enabled() const {
  std::lock_guard lock(m_mutex);
  return m_ttl.count() > 0;
}

std::optional<std::uint64_t> SessionMap::find(std::uint64_t session, util::TimePoint now) {
  std::lock_guard lock(m_mutex);
  auto found = m_index.find(session);
  if (found == m_index.end()) {
    return std::nullopt;
  }
  Order::iterator entry = found->second;
  if (expired(*entry, now)) {
    m_order.erase(entry);
    m_index.erase(found);
    return std::nullopt;
  }
  entry->last_use = now;
  m_order.splice(m_order.begin(), m_order, entry);
  return entry->key;
}

void SessionMap::bind(std::uint64_t session, std::uint64_t key, util::TimePoint now) {
  std::lock_guard lock(m_mutex);
  if (m_ttl.count() <= 0) {
    return;
  }
  if (auto found = m_index.find(session); found != m_index.end()) {
    found->second->key = key;
    found->second->last_use = now;
    m_order.splice(m_order.begin(), m_order, found->second);
  } else {
    m_order.push_front(Entry{session, key, now});
    m_index.emplace(session, m_order.begin());
  }
  drop_stale(now);
}

// The list runs from the most recently used to the least: what is over the
// capacity or past the ttl sits at its end. So each bind drops at most what
// has gone stale since, and no walk of the map is ever needed.
void SessionMap::drop_stale(util::TimePoint now) {
  while (!m_order.empty() && (m_order.size() > m_capacity || expired(m_order.back(), now))) {
    m_index.erase(m_order.back().session);
    m_order.pop_back();
  }
}

std::size_t SessionMap::size() const {
  std::lock_guard lock(m_mutex);
  return m_order.size();
}

std::vector<SessionMap::Saved> SessionMap::live(util::TimePoint now) const {
  std::vector<Saved> out;
  std::lock_guard lock(m_mutex);
  for (const Entry& entry : m_order) {
    if (expired(entry, now)) {
      break; // the rest was used even earlier
    }
    out.push_back(Saved{entry.session, entry.key, entry.last_use});
  }
  return out;
}

void SessionMap::restore(std::vector<Saved> sessions, util::TimePoint now) {
  // Oldest first: each bind puts its session in front, so the most recent
  // ends up there, and the capacity drops the oldest.
  std::sort(sessions.begin(), sessions.end(),
            [](const Saved& a, const Saved& b) { return a.last_use < b.last_use; });
  std::chrono::milliseconds ttl;
  {
    std::lock_guard lock(m_mutex);
    ttl = m_ttl;
  }
  for (const Saved& saved : sessions) {
    if (saved.last_use <= now && saved.last_use + ttl > now) {
      bind(saved.session, saved.key, saved.last_use);
    }
  }
}

std::vector<std::size_t> SessionMap::count(const std::vector<std::uint64_t>& keys,
                                           util::TimePoint now) const {
  std::vector<std::size_t> counts(keys.size(), 0);
  std::lock_guard lock(m_mutex);
  for (const Entry& entry : m_order) {
    if (expired(entry, now)) {
      break; // the rest was used even earlier
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == entry.key) {
        ++counts[i];
        break;
      }
    }
  }
  return counts;
}

} // namespace keyshim::pool
