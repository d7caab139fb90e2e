// Waiting for a key: a pool's max_wait lets a request that finds no key
// eligible wait, nothing sent, for a cooldown to end or an in-flight slot
// to free, in the pool's WaitRoom, first come, first served.
#include "relay/exchange.hpp"

#include "relay/json_error.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::relay {
using namespace std::chrono;

// True when the request now waits. It does only while max_wait has time
// left and a key may become eligible within it: one busy at its
// max_concurrent, or a cooldown that ends before the wait would; and never
// once shutdown has emptied the wait room (a request whose body was still
// arriving then), which would hold up the drain until max_wait.
bool Exchange::cooling_for_request(std::size_t index) const {
  return m_pool.cooling_for(index, model());
}

bool Exchange::start_waiting(const pool::Selection& selection) {
  if (m_settings.max_wait.count() == 0 || m_context.waits.closed()) {
    return false;
  }
  const MonoTime now = m_context.clock.now();
  if (!m_wait_since) {
    m_wait_since = now;
  }
  const MonoTime until = *m_wait_since + m_settings.max_wait;
  if (now >= until) {
    return false;
  }
  std::optional<MonoTime> cooldown_end;
  if (selection.earliest_available) {
    cooldown_end = now + duration_cast<milliseconds>(*selection.earliest_available - system_clock::now());
  }
  if (!selection.busy && !(cooldown_end && *cooldown_end < until)) {
    return false;
  }
  // A key that failed earlier in this request and is cooling, for every
  // model or for this request's, is what the wait is for (one key, a 429
  // with Retry-After: 2): it may serve again when its cooldown ends.
  // max_attempts still bounds the attempts.
  for (std::size_t i = 0; i < m_excluded.size(); ++i) {
    if (m_excluded[i] && cooling_for_request(i)) {
      m_excluded[i] = false;
    }
  }
  MonoTime due = cooldown_end ? std::min(*cooldown_end, until) : until;
  if (m_phase != Phase::waiting) {
    util::log_debug("{} {} waits up to {} for a key of pool {}", m_record.method, m_record.path,
                    util::format_duration(duration_cast<milliseconds>(until - now)), m_served.config->name);
  }
  m_phase = Phase::waiting;
  m_context.waits.enter(m_served.config->name, shared_from_this());
  arm_deadline(Watchdog::Kind::waiting, std::max(milliseconds(1), duration_cast<milliseconds>(due - now)));
  return true;
}

bool Exchange::retry() {
  if (m_phase != Phase::waiting) {
    return true;
  }
  choose_key(); // an attempt, a longer wait, or the answer
  return m_phase != Phase::waiting;
}

// The timer of a waiting request: max_wait is over (a last try, then the
// 503), or a cooldown has ended (every waiter of the pool tries, in order).
void Exchange::on_wait_deadline() {
  if (m_context.clock.now() >= *m_wait_since + m_settings.max_wait) {
    stop_waiting();
    choose_key();
    return;
  }
  m_context.waits.wake(m_served.config->name);
}

void Exchange::stop_waiting() {
  if (m_wait_since) {
    m_context.waits.leave(m_served.config->name, this);
  }
  if (m_phase == Phase::waiting) {
    m_phase = Phase::choosing;
  }
}

void Exchange::shutting_down() {
  if (m_phase != Phase::waiting) {
    return;
  }
  stop_waiting();
  m_client_keep_alive = false;
  m_record.error = "keyshim shut down while the request waited for a key";
  Answer refusal = json_error_answer(503, "keyshim: shutting down while this request waited for a key; retry",
                                     "keyshim_no_key_available", "shutting_down");
  refusal.headers.emplace_back("Retry-After", "1");
  answer(refusal);
}

milliseconds Exchange::waited() const {
  return m_wait_since ? duration_cast<milliseconds>(m_context.clock.now() - *m_wait_since) : milliseconds(0);
}

// Every key this request holds goes back through here: a freed slot is
// offered to the pool's waiters at once.
void Exchange::release_key() {
  if (!m_holding_key) {
    return;
  }
  m_pool.release(*m_holding_key, m_holding_probe ? model() : nullptr);
  m_holding_key.reset();
  m_holding_probe = false;
  m_context.waits.wake(m_served.config->name);
}

} // namespace keyshim::relay
