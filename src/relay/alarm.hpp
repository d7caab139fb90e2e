#pragma once
// Alarms: the deadlines of the exchange, the connection and the WebSocket
// tunnel, on the relay's monotonic clock. A later deadline changes nothing:
// the wait already pending rings early and its owner, by the clock, finds
// its deadline not yet reached and arms again. A request moves its
// deadlines several times (head, body, first byte, idle, the next head),
// almost always later, so a connection's alarm is re-armed about once per
// timeout, not several times per request. Where the wait happens is an
// AlarmSource: the event loop's LoopAlarms, or, in tests, a fake clock that
// rings each alarm as it advances past its time
// (tests/support/fake_alarms.hpp). The source is asked only when a deadline
// moves earlier or is cancelled, and the owner's handler is fixed once:
// arming builds no handler object. Event-loop thread only.
#include "relay/beast.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

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

// The event loop's alarms, all on one timer set for the earliest of them, as
// nginx keeps its timers in one tree and sleeps until the first. Each alarm
// with an asio timer of its own cost a timerfd_settime and a posted
// completion (one more epoll_wait) per request: a request's deadlines begin
// earlier than the loop's earliest, and end with a cancel. Here arming for
// a later time than the earliest, and cancelling, touch no kernel timer and
// post nothing; when the last alarm stops, the timer is stopped too, so that
// a loop with nothing to wait for ends. A waiting alarm holds its owner, and
// a stop never lets go of an owner's last reference inside the owner's own
// call: that one is dropped from the loop, as an aborted handler would be.
class LoopAlarms final : public AlarmSource {
public:
  explicit LoopAlarms(Executor ex) : m_timer(ex) {}
  // Lets go of every owner that waits.
  ~LoopAlarms() override;
  LoopAlarms(const LoopAlarms&) = delete;
  LoopAlarms& operator=(const LoopAlarms&) = delete;

  void wait(Alarm& alarm, MonoTime due) override;
  void stop(Alarm& alarm) override;
  std::size_t waiting() const { return m_waits.size(); }

private:
  struct Wait {
    Alarm* alarm;
    unsigned epoch;
    std::shared_ptr<void> keep;
  };
  using Waits = std::multimap<MonoTime, Wait>;
  // Takes `alarm`'s wait, if it has one, out of the map.
  void remove(Alarm& alarm);
  // The timer's wait ends no later than `due`.
  void wake_by(MonoTime due);
  void on_timer(unsigned generation);
  // Rings every alarm due at `now`, then waits for the next.
  void ring_due(MonoTime now);
  // Drops `keep` now, or from the loop when it is the owner's last reference.
  void let_go(std::shared_ptr<void> keep);

  Timer m_timer;
  Waits m_waits;
  std::vector<Waits::node_type> m_spare;         // nodes of stopped waits, for the next ones: no allocation
  std::vector<std::shared_ptr<void>> m_released; // last references, dropped from the loop
  bool m_timer_pending = false;
  MonoTime m_timer_due{};
  unsigned m_generation = 0; // of the timer's wait: a replaced one is ignored
};

class Alarm {
public:
  Alarm(AlarmSource& source, AlarmOwner& owner) : m_source(source), m_owner(owner) {}
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;

  // Make sure the owner's on_alarm runs no later than `due`. If a wait is
  // already pending for `due` or earlier, nothing happens.
  void arm(MonoTime due) {
    if (m_pending && m_armed <= due) {
      return;
    }
    ++m_epoch;
    m_source.wait(*this, due); // in place of the wait at due(), if one is pending
    m_pending = true;
    m_armed = due;
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
  // The time of the pending wait, if there is one.
  MonoTime due() const { return m_armed; }
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
  AlarmOwner& m_owner;
  MonoTime m_armed{};
  bool m_pending = false;
  unsigned m_epoch = 0;
};

} // namespace keyshim::relay
