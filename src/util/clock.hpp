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
  TimePoint now() const override { return std::chrono::system_clock::now(); }
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
  std::chrono::steady_clock::time_point now() const override { return std::chrono::steady_clock::now(); }
};

// The process-wide real monotonic clock.
MonoClock& steady_clock();

} // namespace keyshim::util
