#include "relay/alarm.hpp"

namespace keyshim::relay {
namespace {

// Each alarm's own asio timer. Moving a pending wait's expiry makes that
// wait end with operation_aborted; a wait that had already fired when it
// was replaced or cancelled still completes without an error, and the
// alarm's epoch tells it apart. The handler holds the owner, so the alarm
// (one of its members) outlives it.
class LoopAlarms final : public AlarmSource {
public:
  void wait(Alarm& alarm, MonoTime due) override {
    Timer& timer = alarm.timer();
    timer.expires_at(due);
    timer.async_wait([&alarm, epoch = alarm.epoch(), keep = alarm.keep_owner()](const ErrorCode& ec) {
      if (!ec) {
        alarm.ring(epoch);
      }
    });
  }
  void stop(Alarm& alarm) override { alarm.timer().cancel(); }
};

} // namespace

AlarmSource& loop_alarms() {
  static LoopAlarms alarms;
  return alarms;
}

} // namespace keyshim::relay
