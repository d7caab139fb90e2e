#include "util/clock.hpp"

namespace keyshim::util {

Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

MonoClock& steady_clock() {
  static SteadyClock clock;
  return clock;
}

} // namespace keyshim::util
