#include "relay/exchange.hpp"

#include "policy/request_model.hpp"
#include "policy/request_session.hpp"
#include "relay/header_rules.hpp"
#include "relay/health_report.hpp"
#include "relay/redact.hpp"
#include "relay/replay_request.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// How long a request waits for the new token of a key that answered 401: a
// key_cmd run is killed after 10 s, and the refresher may be finishing
// another key's run first.
constexpr milliseconds k_new_token_wait = seconds(15);

std::string path_of(std::string_view target) {
  return std::string(target.substr(0, target.find('?'))); // a query may carry a key
}

} // namespace

Exchange::Exchange(std::shared_ptr<const PoolState> state, const Route& route, ClientRequest request,
                   bool keep_alive, std::shared_ptr<Downstream> client, RelayContext& context)
    : m_state(std::move(state)), m_served(&m_state->pools.at(route.pool)),
      m_settings(&m_served->config->upstream), m_pool(m_served->keys.get()), m_request(std::move(request)),
      m_keep_alive(keep_alive), m_client(std::move(client)), m_context(context),
      m_started(context.mono.now()), m_plan(m_pool->size(), m_settings->max_attempts),
      m_out(m_client->socket()), m_timer(context.alarms, *this) {
  m_record.method = std::string(m_request.method_string());
  m_record.path = path_of(m_request.target()); // as the client sent it, with the pool's prefix
  m_record.pool = m_served->config->name;
  start_capture(); // before the target loses its pool prefix
  m_request.target(route.target);
  m_model = policy::request_model(m_request.target(), m_request.body());
  m_record.model = m_model.value_or("");
  if (m_settings->session_ttl.count() > 0) {
    m_session = policy::request_session(session_header(m_request), m_request.target(), m_request.body());
  }
  ReplayRequest replay = read_replay_request(m_request, *m_pool, *m_served->config);
  m_record.replay_of = replay.replay_of;
  m_pinned = replay.pinned;
  m_refusal = std::move(replay.refusal);
}

void Exchange::start() {
  m_timer.arm(m_started + k_client_watch_delay); // the hang-up watch starts then
  // Requests already waiting for this pool's keys go first: one may be
  // free now because a cooldown ended a moment before their timer fires.
  m_context.waits.wake(m_served->config->name);
  if (m_refusal) {
    m_record.error = "bad keyshim-replay or keyshim-key field";
    answer(*m_refusal);
    return;
  }
  choose_key();
}

// Each pass either makes an attempt (bounded by max_attempts) or excludes a
// key for good (bounded by the pool size), so the loop ends.
void Exchange::choose_key() {
  m_phase = Choosing{};
  m_watchdog.stop();
  if (m_pinned) {
    choose_pinned();
    return;
  }
  while (!m_plan.out_of_attempts()) {
    pool::Selection selection = m_pool->acquire(m_plan.mask(), model(), affinity());
    if (selection.index) {
      m_client->remember_key(selection.key_id);
      attempt(selection);
      return;
    }
    if (m_plan.attempts() == 0 && !m_pool->serves(model())) {
      // No key of the pool may ever take it: no attempt and no wait.
      answer(unserved_model_answer(*model(), *m_served->config));
      return;
    }
    if (wait_for_token()) {
      return;
    }
    if (m_plan.drop_repeat()) {
      continue; // the key went cooling after its failure: move on
    }
    // A key this request cooled is what a wait is for: eligible again
    // (acquire says when its cooldown ends, or takes it once it has ended).
    if (!m_reopening && m_settings->max_wait.count() > 0 && m_plan.readmit_cooled()) {
      continue;
    }
    if (!m_reopening && start_waiting(selection)) { // a moving turn does not wait
      return;
    }
    if (m_plan.attempts() == 0) {
      answer(no_key_answer(selection, m_context.wall.now(), m_plan.waited(m_context.mono.now())));
      return;
    }
    break;
  }
  // Out of attempts or keys: the last upstream error is the most truthful
  // answer; with none (only transport failures), say what each key got.
  answer(m_plan.final_answer());
}

// The key the request names serves it once, whatever its health: the user
// asked for that key's answer, so there is no failover, no wait and no
// repeat; what it got is the answer (its error relayed, or the 502).
void Exchange::choose_pinned() {
  if (m_plan.attempts() > 0) {
    answer(m_plan.final_answer());
    return;
  }
  attempt(m_pool->acquire_pinned(*m_pinned));
}

// A named session's key is the pool's to remember; without one, the
// connection's last key is the preference.
pool::Affinity Exchange::affinity() const {
  return pool::Affinity{m_session, m_session == 0 ? m_client->last_key() : 0};
}

void Exchange::attempt(pool::Selection selection) {
  const std::size_t index = *selection.index;
  m_plan.begin();
  m_quota.reset();
  if (m_capture) {
    m_capture->attempt_started(m_context.mono.now());
  }
  m_record.attempts = m_plan.attempts_made();
  m_lease =
      KeyLease(*m_pool, index, selection.probe ? model() : nullptr, m_context.waits, m_served->config->name);
  const config::KeyConfig& key = m_pool->key(index);
  if (selection.reached_limit) {
    log_limit_reached(key.label, m_pool->limits(index), m_context.wall.now());
  }
  const pool::SecretInUse secret = m_pool->secret(index);
  std::optional<std::size_t> body_size;
  if (!m_request.body().empty() || m_request.has_content_length() || m_request.chunked()) {
    body_size = m_request.body().size();
  }
  AttemptRequest request{
      upstream_head(m_request.base(),
                    upstream_target(m_request.target(), m_served->query_auth_params, key, *secret.secret),
                    key, *secret.secret, body_size),
      &m_request.body(), m_request.method() == http::verb::head, m_state->tls, &m_served->origins.at(index)};
  std::shared_ptr<Attempt> upstream =
      m_context.attempts.make(key, std::move(request), m_client->piece_buffer(), k_piece_size,
                              std::shared_ptr<AttemptEvents>(shared_from_this(), this));
  Trying& trying = m_phase.emplace<Trying>();
  trying.upstream = upstream;
  trying.key = index;
  trying.token = secret.generation;
  upstream->start(m_context.mono.now());
}

void Exchange::fail_attempt(policy::TransportFailure failure, const std::string& detail) {
  Trying& t = *trying();
  const std::size_t key = t.key;
  drop_upstream();
  util::log_debug("key {} attempt failed: {} ({})", m_pool->key(key).label, failure_word(failure, false),
                  detail);
  policy::Outcome outcome;
  outcome.transport = failure;
  act(key, outcome, verdict_for(key, outcome), {});
}

// The backoff grows from the streak of the scope the failure will count in:
// a connection failure is the key's, anything a response says may be the
// model's (account-wide verdicts use no streak).
policy::Verdict Exchange::verdict_for(std::size_t key, const policy::Outcome& outcome) const {
  bool key_wide = outcome.transport != policy::TransportFailure::none &&
                  outcome.transport != policy::TransportFailure::first_byte_timeout;
  pool::Streaks streaks = m_pool->streaks(key, key_wide ? nullptr : model());
  return policy::classify(outcome, {streaks.failures, streaks.rate_limits}, m_context.wall.now(),
                          {m_settings->max_cooldown});
}

void Exchange::act(std::size_t key, const policy::Outcome& outcome, const policy::Verdict& verdict,
                   std::string_view relay_body) {
  // Before the lease goes: a waiter woken by it must not take the refused token.
  const bool renew = renews_token(key, outcome, verdict);
  if (!renew) {
    apply_health(key, outcome, verdict);
  }
  m_lease.release();
  if (outcome.transport == policy::TransportFailure::none) {
    Trying* t = trying();
    std::string_view reason = t && t->upstream ? t->upstream->head().reason() : std::string_view{};
    m_plan.note_error(upstream_error_answer(outcome, reason, relay_body, *m_state->redactor));
  }
  if (renew) {
    m_plan.renew(key, m_context.mono.now() + k_new_token_wait);
    m_context.tokens.run_due();
  } else if (verdict.action == policy::Action::relay || verdict.action == policy::Action::commit) {
    answer(m_plan.last_error());
    return;
  } else {
    m_plan.after_failure(key, verdict.action, verdict.cooldown.count() > 0);
  }
  choose_key();
}

// A 401 to a key_cmd key's token, before commit: the token may just have
// expired early or been revoked, so the key's command runs for a new one and
// the request tries the same key once more with it (an attempt max_attempts
// does not count) before the 401's verdict may disable the key. Its health
// is left alone meanwhile; the attempt and its failure class still count.
bool Exchange::renews_token(std::size_t key, const policy::Outcome& outcome, const policy::Verdict& verdict) {
  const Trying* t = trying();
  if (outcome.status != 401 || verdict.change != policy::HealthChange::disable || t == nullptr ||
      m_reopening || !m_plan.may_renew(key) || !m_pool->reject_secret(key, t->token)) {
    return false;
  }
  const std::string& label = m_pool->key(key).label;
  m_plan.note_tried(fmt::format("{}: 401", label));
  m_record.chain.push_back(fmt::format("{}:401", label));
  pool::Report report = health_report(outcome, verdict);
  report.change = pool::Change::none;
  m_pool->report(key, model(), report);
  util::log_info("key {} answered 401: its key_cmd runs for a new token, and the request tries the key once "
                 "more with it (not counted in max_attempts)",
                 label);
  return true;
}

} // namespace keyshim::relay
