#include "support/fake_clock.hpp"

#include <chrono>

namespace keyshim::test {

FakeClock::FakeClock() {
  using namespace std::chrono;
  set(sys_days{year{2026} / November / 29} + hours{12});
}

} // namespace keyshim::test
