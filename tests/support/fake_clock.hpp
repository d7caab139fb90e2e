#pragma once
// A clock that moves only when a test says so.
#include "util/clock.hpp"

#include <atomic>

namespace keyshim::test {

class FakeClock final : public util::Clock {
public:
  // Starts at 2026-11-29T12:00:00Z so HTTP-date arithmetic has a real date.
  FakeClock();
  util::TimePoint now() const override { return util::TimePoint(util::TimePoint::duration(m_ticks.load())); }
  void advance(util::TimePoint::duration d) { m_ticks += d.count(); }
  void set(util::TimePoint t) { m_ticks = t.time_since_epoch().count(); }

private:
  std::atomic<util::TimePoint::rep> m_ticks;
};

// Monotonic time that moves only when a test says so: what the relay's
// deadlines and waits read (util::MonoClock).
class FakeMonoClock final : public util::MonoClock {
public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Starts one hour after the steady epoch, so "earlier" instants exist.
  FakeMonoClock() : m_ticks(std::chrono::nanoseconds(std::chrono::hours(1)).count()) {}
  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(m_ticks.load())); }
  void advance(std::chrono::nanoseconds d) { m_ticks += d.count(); }

private:
  std::atomic<std::chrono::nanoseconds::rep> m_ticks;
};

} // namespace keyshim::test
