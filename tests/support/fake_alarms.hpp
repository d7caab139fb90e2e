#pragma once
// Alarms on a FakeMonoClock: a relay::AlarmSource whose waits end only when a
// test advances the clock. advance(d) rings, synchronously and in due order,
// every alarm that comes due within d, with the clock set to each one's
// time as it rings (so an owner that arms again for a time still inside d
// rings again within the same advance). Like the loop's timers, a waiting
// alarm holds its owner; a stopped one lets go of it only at the next
// advance (the loop drops an aborted handler later, never inside the call
// that cancelled it). Header-only: it needs the relay layer, which
// keyshim_test_support does not link.
#include "relay/alarm.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace keyshim::test {

class FakeAlarms final : public relay::AlarmSource {
public:
  explicit FakeAlarms(FakeMonoClock& clock) : m_clock(clock) {}
  ~FakeAlarms() override { clear(); }

  void wait(relay::Alarm& alarm, relay::MonoTime due) override {
    stop(alarm);
    m_waits.push_back({&alarm, due, alarm.epoch(), m_next++, alarm.keep_owner()});
  }
  void stop(relay::Alarm& alarm) override {
    for (auto it = m_waits.begin(); it != m_waits.end(); ++it) {
      if (it->alarm == &alarm) {
        m_released.push_back(std::move(it->keep));
        m_waits.erase(it);
        return;
      }
    }
  }

  // Move the clock on by `d`, ringing each alarm due by then, earliest first.
  void advance(std::chrono::nanoseconds d) {
    m_released.clear();
    const relay::MonoTime end = m_clock.now() + d;
    for (int rung = 0; rung < k_max_rings; ++rung) {
      const std::size_t next = earliest();
      if (next == m_waits.size() || m_waits[next].due > end) {
        m_clock.advance(end - m_clock.now());
        return;
      }
      Wait wait = std::move(m_waits[next]);
      m_waits.erase(m_waits.begin() + static_cast<std::ptrdiff_t>(next));
      if (wait.due > m_clock.now()) {
        m_clock.advance(wait.due - m_clock.now());
      }
      wait.alarm->ring(wait.epoch); // `wait.keep` holds the owner through its handler
    }
    ADD_FAILURE() << "alarms kept ringing within one advance: an owner re-arms without the clock moving";
  }

  // Every alarm stops waiting and every owner is let go (a test's tear-down).
  void clear() {
    std::vector<Wait> waits = std::move(m_waits);
    m_waits.clear();
    m_released.clear();
  }

  // How many alarms wait, and the time of the earliest.
  std::size_t waiting() const { return m_waits.size(); }
  std::optional<relay::MonoTime> next_due() const {
    const std::size_t next = earliest();
    return next == m_waits.size() ? std::nullopt : std::optional<relay::MonoTime>(m_waits[next].due);
  }

private:
  static constexpr int k_max_rings = 100'000;
  struct Wait {
    relay::Alarm* alarm;
    relay::MonoTime due;
    unsigned epoch;
    std::uint64_t order; // arming order: equal times ring first-armed first
    std::shared_ptr<void> keep;
  };

  // The index of the wait that rings first, or size() when none waits.
  std::size_t earliest() const {
    std::size_t best = m_waits.size();
    for (std::size_t i = 0; i < m_waits.size(); ++i) {
      const Wait& w = m_waits[i];
      if (best == m_waits.size() || w.due < m_waits[best].due ||
          (w.due == m_waits[best].due && w.order < m_waits[best].order)) {
        best = i;
      }
    }
    return best;
  }

  FakeMonoClock& m_clock;
  std::vector<Wait> m_waits;
  std::vector<std::shared_ptr<void>> m_released; // owners of stopped alarms, dropped at the next advance
  std::uint64_t m_next = 0;
};

} // namespace keyshim::test
