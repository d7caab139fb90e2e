// Waiting for a key: a pool's max_wait lets a request that finds no key
// eligible wait, nothing sent, for a cooldown to end or an in-flight slot
// to free, in the pool's WaitRoom, first come, first served.
#include "relay/exchange.hpp"

#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::relay {
using namespace std::chrono;

// Whether key `index` is cooling for every model or for this request's.
bool Exchange::cooling_for_request(std::size_t index) const {
  return m_pool.cooling_for(index, model());
}

// True when the request now waits (AttemptPlan::wait_for says when it may);
// never once shutdown has emptied the wait room (a request whose body was
// still arriving then), which would hold up the drain until max_wait.
bool Exchange::start_waiting(const pool::Selection& selection) {
  if (m_context.waits.closed()) {
    return false;
  }
  const MonoTime now = m_context.mono.now();
  std::optional<AttemptPlan::Wait> wait =
      m_plan.wait_for(selection, m_settings.max_wait, now, m_context.wall.now());
  if (!wait) {
    return false;
  }
  m_plan.readmit([this](std::size_t i) { return cooling_for_request(i); });
  if (!in<Waiting>()) {
    util::log_debug("{} {} waits up to {} for a key of pool {}", m_record.method, m_record.path,
                    util::format_duration(duration_cast<milliseconds>(wait->until - now)),
                    m_served.config->name);
  }
  m_phase = Waiting{};
  m_context.waits.enter(m_served.config->name, shared_from_this());
  arm_deadline(std::max(milliseconds(1), duration_cast<milliseconds>(wait->due - now)));
  return true;
}

bool Exchange::retry() {
  if (!in<Waiting>()) {
    return true;
  }
  choose_key(); // an attempt, a longer wait, or the answer
  return !in<Waiting>();
}

// The timer of a waiting request: max_wait is over (a last try, then the
// 503), or a cooldown has ended (every waiter of the pool tries, in order).
void Exchange::on_wait_deadline() {
  if (m_plan.waited(m_context.mono.now()) >= m_settings.max_wait) {
    stop_waiting();
    choose_key();
    return;
  }
  m_context.waits.wake(m_served.config->name);
}

void Exchange::stop_waiting() {
  if (m_plan.has_waited()) {
    m_context.waits.leave(m_served.config->name, this);
  }
  if (in<Waiting>()) {
    m_phase = Choosing{};
  }
}

void Exchange::shutting_down() {
  if (!in<Waiting>()) {
    return;
  }
  stop_waiting();
  m_record.error = "keyshim shut down while the request waited for a key";
  Answer refusal = json_error_answer(503, "keyshim: shutting down while this request waited for a key; retry",
                                     "keyshim_no_key_available", "shutting_down");
  refusal.headers.emplace_back("Retry-After", "1");
  answer(refusal, true);
}

} // namespace keyshim::relay
