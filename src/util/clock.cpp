#include "util/clock.hpp"

#include <optional>

namespace keyshim::util {
namespace {

// The times this thread's open turn has read; none outside a turn.
struct TurnTimes {
  int depth = 0;
  std::optional<std::chrono::steady_clock::time_point> steady;
  std::optional<TimePoint> wall;
};

thread_local TurnTimes t_turn;

// The clock's time: read now outside a turn, else once per turn.
template <class RealClock>
typename RealClock::time_point once_per_turn(std::optional<typename RealClock::time_point>& read) {
  if (t_turn.depth == 0) {
    return RealClock::now();
  }
  if (!read) {
    read = RealClock::now();
  }
  return *read;
}

} // namespace

ClockTurn::ClockTurn() {
  ++t_turn.depth;
}

ClockTurn::~ClockTurn() {
  if (--t_turn.depth == 0) {
    t_turn.steady.reset();
    t_turn.wall.reset();
  }
}

TimePoint SystemClock::now() const {
  return once_per_turn<std::chrono::system_clock>(t_turn.wall);
}

std::chrono::steady_clock::time_point SteadyClock::now() const {
  return once_per_turn<std::chrono::steady_clock>(t_turn.steady);
}

Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

MonoClock& steady_clock() {
  static SteadyClock clock;
  return clock;
}

} // namespace keyshim::util
