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

TimePoint SystemClock::now() const {
  if (t_turn.depth == 0) {
    return std::chrono::system_clock::now();
  }
  if (!t_turn.have_wall) {
    t_turn.wall = std::chrono::system_clock::now();
    t_turn.have_wall = true;
  }
  return t_turn.wall;
}

std::chrono::steady_clock::time_point SteadyClock::now() const {
  if (t_turn.depth == 0) {
    return std::chrono::steady_clock::now();
  }
  if (!t_turn.have_steady) {
    t_turn.steady = std::chrono::steady_clock::now();
    t_turn.have_steady = true;
  }
  return t_turn.steady;
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
