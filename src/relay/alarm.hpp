#pragma once
// Alarms: the deadlines of the exchange, the connection and the WebSocket
// tunnel, on the relay's monotonic clock. A later deadline changes nothing:
// the wait already pending fires early and its owner, by the clock, finds
// its deadline not yet reached and arms again. Every change of the event
// loop's earliest timer costs a timerfd_settime call, and a request moves
// its deadlines several times (head, body, first byte, idle, the next
// head), almost always later, so a busy loop re-arms a connection's timer
// about once per timeout, not several times per request. Where the wait
// happens is an AlarmSource: the event loop's timers (loop_alarms()), or,
// in tests, a fake clock that rings each alarm as it advances past its time
// (tests/support/fake_alarms.hpp). The source is asked only when a deadline
// moves earlier or is cancelled, and the owner's handler is fixed once:
// arming builds no handler object. Event-loop thread only.
#include "relay/beast.hpp"

#include <memory>

namespace keyshim::relay {

// What an alarm rings.
class AlarmOwner {
public:
  // The alarm's time came: it may be early (the owner's deadline moved
  // later meanwhile), so the owner checks its own deadline.
  virtual void on_alarm() = 0;
  // A strong reference to the owner, held while an alarm waits, as an
  // asynchronous handler holds its object.
  virtual std::shared_ptr<void> alarm_keepalive() = 0;

protected:
  ~AlarmOwner() = default;
};

class Alarm;

// Where alarms wait for their time.
class AlarmSource {
public:
  virtual ~AlarmSource() = default;
  // `alarm` waits for `due` in place of any wait it had; when the time
  // comes, the source calls alarm.ring(the epoch it had now).
  virtual void wait(Alarm& alarm, MonoTime due) = 0;
  // `alarm`'s wait ends without a ring (a ring already on its way is
  // ignored by the alarm's epoch).
  virtual void stop(Alarm& alarm) = 0;
};

// The event loop's timers: the real source, stateless and process-wide.
AlarmSource& loop_alarms();

class Alarm {
public:
  // `ex` is the loop the alarm's timer runs on (unused by a fake source).
  Alarm(AlarmSource& source, Executor ex, AlarmOwner& owner)
      : m_source(source), m_timer(ex), m_owner(owner) {}
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;

  // Make sure the owner's on_alarm runs no later than `due`. If a wait is
  // already pending for `due` or earlier, nothing happens.
  void arm(MonoTime due) {
    if (m_pending && m_armed <= due) {
      return;
    }
    m_pending = true;
    m_armed = due;
    ++m_epoch;
    m_source.wait(*this, due);
  }
  // No on_alarm runs after this, until the next arm().
  void cancel() {
    ++m_epoch;
    if (m_pending) {
      m_pending = false;
      m_source.stop(*this);
    }
  }

  // ---- for an AlarmSource
  unsigned epoch() const { return m_epoch; }
  Timer& timer() { return m_timer; }
  std::shared_ptr<void> keep_owner() const { return m_owner.alarm_keepalive(); }
  // The wait begun at `epoch` is over: the owner hears of it unless the
  // alarm was armed again or cancelled since.
  void ring(unsigned epoch) {
    if (epoch != m_epoch || !m_pending) {
      return;
    }
    m_pending = false;
    m_owner.on_alarm();
  }

private:
  AlarmSource& m_source;
  Timer m_timer;
  AlarmOwner& m_owner;
  MonoTime m_armed{};
  bool m_pending = false;
  unsigned m_epoch = 0;
};

} // namespace keyshim::relay
