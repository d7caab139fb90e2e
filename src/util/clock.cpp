#include "util/clock.hpp"

namespace keyshim::util {
namespace {

struct TurnTimes {
  int depth = 0;
  bool have_steady = false;
  bool have_wall = false;
  std::chrono::steady_clock::time_point steady;
  TimePoint wall;
};

thread_local TurnTimes t_turn;

} // namespace

ClockTurn::ClockTurn() {
  ++t_turn.depth;
}

ClockTurn::~ClockTurn() {
  if (--t_turn.depth == 0) {
    t_turn.have_steady = false;
    t_turn.have_wall = false;
  }
}

namespace {

// The clock's time: read now outside a turn, else once per turn.
template <class RealClock>
typename RealClock::time_point once_per_turn(bool& have, typename RealClock::time_point& read) {
  if (t_turn.depth == 0) {
    return RealClock::now();
  }
  if (!have) {
    read = RealClock::now();
    have = true;
  }
  return read;
}

} // namespace

TimePoint SystemClock::now() const {
  return once_per_turn<std::chrono::system_clock>(t_turn.have_wall, t_turn.wall);
}

std::chrono::steady_clock::time_point SteadyClock::now() const {
  return once_per_turn<std::chrono::steady_clock>(t_turn.have_steady, t_turn.steady);
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
