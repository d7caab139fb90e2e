#include "relay/wait_room.hpp"

#include <algorithm>

namespace keyshim::relay {

void WaitRoom::enter(Place& place, const std::shared_ptr<Waiter>& waiter) {
  if (place.number == 0) {
    place.number = m_next_number++;
    place.since = m_clock.now();
  }
  // emplace keeps an entry already there.
  m_pools[place.pool][place.lane].emplace(place.number, Entry{waiter, place.since});
}

void WaitRoom::leave(const Place& place) {
  auto pool = m_pools.find(place.pool);
  if (pool == m_pools.end()) {
    return;
  }
  auto lane = pool->second.find(place.lane);
  if (lane == pool->second.end()) {
    return;
  }
  lane->second.erase(place.number);
  if (!m_waking) {
    prune(place.pool);
  }
}

// A retry may release a key (its attempt failed at once) or answer, and so
// wake a pool from inside this loop: that wake is queued and runs after the
// current one, so no lane is walked while a retry changes it. Each pass ends:
// every step either takes a waiter out or closes a lane for the pass, and a
// pool runs again only when a retry released a key.
void WaitRoom::wake(const std::string& pool) {
  if (m_pools.find(pool) == m_pools.end()) {
    return;
  }
  if (m_waking) {
    if (std::find(m_pending.begin(), m_pending.end(), pool) == m_pending.end()) {
      m_pending.push_back(pool);
    }
    return;
  }
  m_waking = true;
  serve(pool);
  prune(pool);
  while (!m_pending.empty()) {
    std::string next = std::move(m_pending.front());
    m_pending.erase(m_pending.begin());
    serve(next);
    prune(next);
  }
  m_waking = false;
}

// The oldest head among the lanes still open in this pass is asked; a head
// that finds no key closes its lane for the pass. Only the pool's lanes are
// looked at (a handful: one per model waited for), never the queue behind.
void WaitRoom::serve(const std::string& pool) {
  auto found = m_pools.find(pool);
  if (found == m_pools.end()) {
    return;
  }
  Lanes& lanes = found->second;
  std::vector<const Lane*> found_none; // lanes whose head found no key in this pass
  for (;;) {
    Lane* oldest = nullptr;
    for (auto& [name, lane] : lanes) {
      bool open = std::find(found_none.begin(), found_none.end(), &lane) == found_none.end();
      if (open && !lane.empty() && (!oldest || lane.begin()->first < oldest->begin()->first)) {
        oldest = &lane;
      }
    }
    if (!oldest) {
      return;
    }
    const std::uint64_t number = oldest->begin()->first;
    std::shared_ptr<Waiter> waiter = oldest->begin()->second.waiter.lock();
    if (!waiter || waiter->retry()) {
      oldest->erase(number); // by number: the retry may have left already
    } else if (oldest->count(number) != 0) {
      found_none.push_back(oldest);
    } // else it still waits, but elsewhere (its pool moved in a reload): the lane stays open
  }
}

void WaitRoom::prune(const std::string& pool) {
  auto found = m_pools.find(pool);
  if (found == m_pools.end()) {
    return;
  }
  std::erase_if(found->second, [](const auto& lane) { return lane.second.empty(); });
  if (found->second.empty()) {
    m_pools.erase(found);
  }
}

void WaitRoom::wake_all() {
  std::vector<std::string> pools;
  for (const auto& [name, lanes] : m_pools) {
    pools.push_back(name);
  }
  for (const std::string& name : pools) {
    wake(name);
  }
}

void WaitRoom::close_all() {
  m_closed = true;
  std::vector<std::shared_ptr<Waiter>> everyone;
  for (auto& [pool, lanes] : m_pools) {
    for (auto& [name, lane] : lanes) {
      for (auto& [number, entry] : lane) {
        if (std::shared_ptr<Waiter> waiter = entry.waiter.lock()) {
          everyone.push_back(std::move(waiter));
        }
      }
    }
  }
  m_pools.clear();
  for (const std::shared_ptr<Waiter>& waiter : everyone) {
    waiter->shutting_down();
  }
}

std::size_t WaitRoom::waiting(const std::string& pool) const {
  auto found = m_pools.find(pool);
  std::size_t count = 0;
  if (found != m_pools.end()) {
    for (const auto& [name, lane] : found->second) {
      count += lane.size();
    }
  }
  return count;
}

WaitRoom::Queue WaitRoom::queue(const std::string& pool) const {
  Queue out;
  auto found = m_pools.find(pool);
  if (found == m_pools.end()) {
    return out;
  }
  // The lowest number entered first: the head of some lane.
  const Entry* oldest = nullptr;
  std::uint64_t oldest_number = 0;
  for (const auto& [name, lane] : found->second) {
    out.waiting += lane.size();
    if (!lane.empty() && (!oldest || lane.begin()->first < oldest_number)) {
      oldest = &lane.begin()->second;
      oldest_number = lane.begin()->first;
    }
  }
  if (oldest) {
    out.oldest =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(m_clock.now() - oldest->since));
  }
  return out;
}

} // namespace keyshim::relay
