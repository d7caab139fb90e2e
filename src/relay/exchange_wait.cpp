// Waiting for a key: a pool's max_wait lets a request that finds no key
// eligible wait, nothing sent, for a cooldown to end or an in-flight slot
// to free, in the pool's WaitRoom, first come, first served (the rule is in
// wait_room.hpp). A request that waited is served from the newest pool file:
// a reload may have raised a limit, replaced a key or removed the pool.
#include "relay/exchange.hpp"

#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::relay {
using namespace std::chrono;

// Whether key `index` is cooling for every model or for this request's.
bool Exchange::cooling_for_request(std::size_t index) const {
  return m_pool->cooling_for(index, model());
}

// True when the request now waits (AttemptPlan::wait_for says when it may);
// never once shutdown has emptied the wait room (a request whose body was
// still arriving then), which would hold up the drain until max_wait. A
// request already in the room keeps its place and logs nothing: the room
// asks the first waiter of a lane again on every wake.
bool Exchange::start_waiting(const pool::Selection& selection) {
  if (m_context.waits.closed()) {
    return false;
  }
  const MonoTime now = m_context.mono.now();
  std::optional<AttemptPlan::Wait> wait =
      m_plan.wait_for(selection, m_settings->max_wait, now, m_context.wall.now());
  if (!wait) {
    return false;
  }
  m_plan.readmit([this](std::size_t i) { return cooling_for_request(i); });
  m_phase = Waiting{};
  if (!m_in_room) {
    util::log_debug("{} {} waits up to {} for a key of pool {}", m_record.method, m_record.path,
                    util::format_duration(duration_cast<milliseconds>(wait->until - now)),
                    m_served->config->name);
    m_place.pool = m_served->config->name;
    m_place.lane = m_model.value_or("");
    m_context.waits.enter(m_place, shared_from_this());
    m_in_room = true;
  }
  arm_deadline(std::max(milliseconds(1), duration_cast<milliseconds>(wait->due - now)));
  return true;
}

// The key whose token a 401 refused runs its command for a new one: the
// request waits for that token, nothing sent, whatever max_wait says, but no
// longer than AttemptPlan::renewal_until. False when there is nothing to
// wait for (the token came, the run failed and the key cools, time is up):
// the key is then dropped like any repeat that is not eligible.
bool Exchange::wait_for_token() {
  std::optional<std::size_t> key = m_plan.renewing();
  const MonoTime now = m_context.mono.now();
  if (!key || m_reopening || m_context.waits.closed() || now >= m_plan.renewal_until() ||
      !m_pool->awaiting_secret(*key)) {
    return false;
  }
  m_phase = Waiting{};
  if (!m_in_room) {
    m_place.pool = m_served->config->name;
    m_place.lane = m_model.value_or("");
    m_context.waits.enter(m_place, shared_from_this());
    m_in_room = true;
  }
  arm_deadline(std::max(milliseconds(1), duration_cast<milliseconds>(m_plan.renewal_until() - now)));
  return true;
}

// The wait room asks: a key of the pool may be free. Done (true) when the
// request got a key or its answer; false keeps its place.
bool Exchange::retry() {
  if (in<Waiting>() && take_newest_state()) {
    choose_key(); // an attempt, a longer wait, or the answer
  }
  if (in<Waiting>()) {
    return false;
  }
  stop_waiting(); // out of the room (the room also drops the place it asked)
  return true;
}

// The timer of a waiting request: max_wait is over (a last try, then the
// 503), or a cooldown has ended (the pool's waiters are asked, oldest first,
// and this one waits on for the rest of max_wait if it was not served).
void Exchange::on_wait_deadline() {
  if (!take_newest_state()) {
    return;
  }
  if (m_plan.renewing() || m_plan.waited(m_context.mono.now()) >= m_settings->max_wait) {
    // A new token's wait is over too: the key is tried, or dropped.
    stop_waiting();
    choose_key();
    return;
  }
  m_context.waits.wake(m_place.pool);
  if (in<Waiting>()) {
    rearm_wait();
  }
}

// The next time a waiter that was not asked looks again: the end of its
// max_wait, or a cooldown that ends sooner.
void Exchange::rearm_wait() {
  const MonoTime now = m_context.mono.now();
  const util::TimePoint wall_now = m_context.wall.now();
  pool::Selection pending;
  pending.busy = true; // keep waiting until max_wait whatever the cooldowns say
  pending.earliest_available = m_pool->earliest_available(model());
  if (pending.earliest_available && *pending.earliest_available <= wall_now) {
    pending.earliest_available.reset(); // ended already: nothing to look again for
  }
  if (std::optional<AttemptPlan::Wait> wait = m_plan.wait_for(pending, m_settings->max_wait, now, wall_now)) {
    arm_deadline(std::max(milliseconds(1), duration_cast<milliseconds>(wait->due - now)));
  }
}

// A waiting request is served from the state published last, routed again as
// the same request arriving now would be: its pool by name, or, when a reload
// removed that pool, wherever the target leads now (the default pool, or the
// 404 a path no pool serves gets). False when it was answered here.
bool Exchange::take_newest_state() {
  std::shared_ptr<const PoolState> newest = m_context.states.current();
  if (newest == m_state || !newest->config) {
    return true; // a reload never publishes an unusable file; an empty state is a test's
  }
  std::string target(m_request.target());
  if (!m_served->config->is_default()) {
    target = "/" + m_served->config->name + target;
  }
  if (std::optional<Route> route = newest->route(target)) {
    serve_from(std::move(newest), *route);
    return true;
  }
  stop_waiting();
  m_record.error = "a reload removed its pool while it waited for a key";
  answer(no_pool_answer(m_record.path, *newest->config));
  return false;
}

void Exchange::serve_from(std::shared_ptr<const PoolState> state, const Route& route) {
  const ServedPool& served = state->pools.at(route.pool);
  m_plan.rekey(*m_pool, *served.keys);
  if (m_in_room && served.config->name != m_place.pool) {
    // It waits on in its new pool's queue, its number (its age) kept.
    m_context.waits.leave(m_place);
    m_place.pool = served.config->name;
    m_context.waits.enter(m_place, shared_from_this());
  }
  m_state = std::move(state);
  m_served = &served;
  m_settings = &served.config->upstream;
  m_pool = served.keys.get();
  m_request.target(route.target);
  m_record.pool = served.config->name;
}

void Exchange::stop_waiting() {
  if (m_in_room) {
    m_context.waits.leave(m_place);
    m_in_room = false;
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
