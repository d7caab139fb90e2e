#pragma once
// A timer that is touched only when a deadline moves earlier. Every change of
// the event loop's earliest timer costs a timerfd_settime call, and a request
// moves its deadlines several times (head, body, first byte, idle, the next
// head), almost always later. Here a later deadline changes nothing: the wait
// already pending fires early, and its owner, finding the deadline not yet
// reached, asks for the real one. So a busy loop re-arms a connection's timer
// about once per timeout instead of several times per request.
//
// The exchange and the connection use relay::Alarm (alarm.hpp), the same
// rule on an injected AlarmSource, so their deadlines run on a fake clock in
// tests; this timer, on the real loop only, serves the WebSocket tunnel.
#include "relay/beast.hpp"

#include <utility>

namespace keyshim::relay {

class DeadlineTimer {
public:
  explicit DeadlineTimer(Executor ex) : m_timer(ex) {}

  // Make sure `on_fire` runs no later than `due`. If a wait is already
  // pending for `due` or earlier, nothing happens and that wait's handler
  // runs instead: the owner must check its own deadline when it fires.
  template <class Handler> void arm(std::chrono::steady_clock::time_point due, Handler on_fire) {
    if (m_pending && m_armed <= due) {
      return;
    }
    m_pending = true;
    m_armed = due;
    m_timer.expires_at(due); // a pending, later wait ends with operation_aborted
    m_timer.async_wait([this, epoch = ++m_epoch, on_fire = std::move(on_fire)](const ErrorCode& ec) mutable {
      // A wait that had already fired when it was replaced or cancelled
      // still completes without an error: the epoch tells it apart.
      if (ec || epoch != m_epoch) {
        return;
      }
      m_pending = false;
      on_fire();
    });
  }

  // No handler runs after this, until the next arm().
  void cancel() {
    m_pending = false;
    ++m_epoch;
    m_timer.cancel();
  }

private:
  Timer m_timer;
  std::chrono::steady_clock::time_point m_armed{};
  bool m_pending = false;
  unsigned m_epoch = 0;
};

} // namespace keyshim::relay
