#include "relay/alarm.hpp"

#include <boost/asio/post.hpp>

namespace keyshim::relay {
namespace {

// Spare map nodes kept for the next waits: about the alarms a busy loop
// arms at once, a few KiB.
constexpr std::size_t k_max_spare = 256;

} // namespace

// The owners are let go once the map is empty: one that stops its alarm
// as it goes finds nothing left to stop.
LoopAlarms::~LoopAlarms() {
  Waits waits = std::move(m_waits);
  m_waits.clear();
  std::vector<std::shared_ptr<void>> released = std::move(m_released);
  m_released.clear();
  waits.clear();
  released.clear();
  m_spare.clear();
}

// The new wait holds the owner before the old one lets go of it.
void LoopAlarms::wait(Alarm& alarm, MonoTime due) {
  Wait wait{&alarm, alarm.epoch(), alarm.keep_owner()};
  remove(alarm);
  if (m_spare.empty()) {
    m_waits.emplace(due, std::move(wait));
  } else {
    Waits::node_type node = std::move(m_spare.back());
    m_spare.pop_back();
    node.key() = due;
    node.mapped() = std::move(wait);
    m_waits.insert(std::move(node));
  }
  wake_by(due);
}

void LoopAlarms::stop(Alarm& alarm) {
  remove(alarm);
  if (m_waits.empty() && m_timer_pending) {
    m_timer_pending = false;
    ++m_generation;
    m_timer.cancel(); // nothing left to wait for: the loop may end
  }
}

void LoopAlarms::remove(Alarm& alarm) {
  auto [first, last] = m_waits.equal_range(alarm.due());
  for (auto it = first; it != last; ++it) {
    if (it->second.alarm == &alarm) {
      Waits::node_type node = m_waits.extract(it);
      std::shared_ptr<void> keep = std::move(node.mapped().keep);
      if (m_spare.size() < k_max_spare) {
        m_spare.push_back(std::move(node));
      }
      let_go(std::move(keep));
      return;
    }
  }
}

void LoopAlarms::let_go(std::shared_ptr<void> keep) {
  if (keep.use_count() > 1) {
    return; // someone else holds the owner: dropping this one destroys nothing
  }
  if (m_released.empty()) {
    asio::post(m_timer.get_executor(), [this] {
      std::vector<std::shared_ptr<void>> released = std::move(m_released);
      m_released.clear();
    });
  }
  m_released.push_back(std::move(keep));
}

void LoopAlarms::wake_by(MonoTime due) {
  if (m_timer_pending && m_timer_due <= due) {
    return;
  }
  m_timer_pending = true;
  m_timer_due = due;
  m_timer.expires_at(due); // aborts the wait it replaces, which is then ignored
  m_timer.async_wait([this, generation = ++m_generation](const ErrorCode&) { on_timer(generation); });
}

void LoopAlarms::on_timer(unsigned generation) {
  if (generation != m_generation) {
    return;
  }
  m_timer_pending = false;
  ring_due(std::chrono::steady_clock::now());
}

// The alarms due are taken out first and then rung: an owner that arms
// again from its ring, even for a time already past, waits for the next
// round of the loop instead of ringing within this one.
void LoopAlarms::ring_due(MonoTime now) {
  std::vector<Wait> due;
  while (!m_waits.empty() && m_waits.begin()->first <= now) {
    Waits::node_type node = m_waits.extract(m_waits.begin());
    due.push_back(std::move(node.mapped()));
    if (m_spare.size() < k_max_spare) {
      m_spare.push_back(std::move(node));
    }
  }
  if (!m_waits.empty()) {
    wake_by(m_waits.begin()->first);
  }
  for (Wait& wait : due) {
    wait.alarm->ring(wait.epoch); // `wait.keep` holds the owner through it
  }
}

} // namespace keyshim::relay
