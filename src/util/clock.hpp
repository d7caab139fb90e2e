#pragma once
// Time as the pure modules see it. Pool and policy take a Clock& so tests can
// advance time without sleeping.
#include <chrono>

namespace keyshim::util {

using TimePoint = std::chrono::system_clock::time_point;
using Millis = std::chrono::milliseconds;

class Clock {
public:
  virtual ~Clock() = default;
  // Wall-clock now. Wall time (not steady) because cooldowns come from
  // provider hints expressed as HTTP dates and are shown to users as times.
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
public:
  TimePoint now() const override; // once per ClockTurn (below)
};

// The process-wide real clock.
Clock& system_clock();

// Monotonic time for deadlines. The relay takes one so its timing can be
// tested by advancing a fake clock.
class MonoClock {
public:
  virtual ~MonoClock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
};

class SteadyClock final : public MonoClock {
public:
  std::chrono::steady_clock::time_point now() const override; // once per ClockTurn (below)
};

// The process-wide real monotonic clock.
MonoClock& steady_clock();

// One turn of the event loop on this thread. While one is open, the real
// clocks read the time once each and answer every later now() with it, as
// nginx reads the time once per wake-up. The loop's I/O handlers each open
// one: a keep-alive request's steps asked the clocks 19 times, at about 25 ns
// a read in a VM (2 % of keyshim's CPU at c=16), and now about 4 times.
// Time stands still only while one handler runs, for microseconds. Outside a
// turn, and on every other thread, now() reads the clock. Turns nest; the
// outermost one's end drops the times it read.
class ClockTurn {
public:
  ClockTurn();
  ~ClockTurn();
  ClockTurn(const ClockTurn&) = delete;
  ClockTurn& operator=(const ClockTurn&) = delete;
};

} // namespace keyshim::util
