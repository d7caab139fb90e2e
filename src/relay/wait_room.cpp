#include "relay/wait_room.hpp"

#include <algorithm>
#include <vector>

namespace keyshim::relay {
namespace {

bool is(const std::weak_ptr<Waiter>& entry, const Waiter* waiter) {
  std::shared_ptr<Waiter> held = entry.lock();
  return !held || held.get() == waiter; // an expired entry goes too
}

} // namespace

void WaitRoom::enter(const std::string& pool, const std::shared_ptr<Waiter>& waiter) {
  std::deque<std::weak_ptr<Waiter>>& queue = m_queues[pool];
  bool present = std::any_of(queue.begin(), queue.end(),
                             [&](const std::weak_ptr<Waiter>& entry) { return entry.lock() == waiter; });
  if (!present) {
    queue.push_back(waiter);
  }
}

void WaitRoom::leave(const std::string& pool, const Waiter* waiter) {
  auto found = m_queues.find(pool);
  if (found == m_queues.end()) {
    return;
  }
  std::deque<std::weak_ptr<Waiter>>& queue = found->second;
  queue.erase(std::remove_if(queue.begin(), queue.end(),
                             [&](const std::weak_ptr<Waiter>& entry) { return is(entry, waiter); }),
              queue.end());
  if (queue.empty()) {
    m_queues.erase(found);
  }
}

// A retry may release a key (its attempt failed at once) and so wake the
// room again from inside this loop: that nested wake only asks for one more
// pass, so the queue is never walked while a retry changes it. Each pass
// ends: a waiter stays only when it found no key, and the passes stop when
// one brings nobody out.
void WaitRoom::wake(const std::string& pool) {
  if (m_queues.find(pool) == m_queues.end()) {
    return;
  }
  if (m_waking) {
    m_again = true;
    return;
  }
  m_waking = true;
  do {
    m_again = false;
    wake_once(pool);
  } while (m_again && m_queues.find(pool) != m_queues.end());
  m_waking = false;
}

void WaitRoom::wake_once(const std::string& pool) {
  auto found = m_queues.find(pool);
  if (found == m_queues.end()) {
    return;
  }
  std::vector<std::shared_ptr<Waiter>> in_order;
  for (const std::weak_ptr<Waiter>& entry : found->second) {
    if (std::shared_ptr<Waiter> waiter = entry.lock()) {
      in_order.push_back(std::move(waiter));
    }
  }
  for (const std::shared_ptr<Waiter>& waiter : in_order) {
    if (waiter->retry()) {
      leave(pool, waiter.get());
    }
  }
}

void WaitRoom::close_all() {
  m_closed = true;
  std::vector<std::shared_ptr<Waiter>> everyone;
  for (auto& [pool, queue] : m_queues) {
    for (const std::weak_ptr<Waiter>& entry : queue) {
      if (std::shared_ptr<Waiter> waiter = entry.lock()) {
        everyone.push_back(std::move(waiter));
      }
    }
  }
  m_queues.clear();
  for (const std::shared_ptr<Waiter>& waiter : everyone) {
    waiter->shutting_down();
  }
}

std::size_t WaitRoom::waiting(const std::string& pool) const {
  auto found = m_queues.find(pool);
  return found == m_queues.end() ? 0 : found->second.size();
}

} // namespace keyshim::relay
