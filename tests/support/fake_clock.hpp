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

} // namespace keyshim::test
