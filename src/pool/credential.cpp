#include "pool/credential.hpp"

#include <algorithm>
#include <atomic>

namespace keyshim::pool {
namespace {

using namespace std::chrono;

// A refresh leaves this much of a token's life, or a quarter of what is left
// when that is less: gcloud and az hand out a cached token until it is
// within minutes of its expiry, and a run too early just gets it again.
constexpr milliseconds k_longest_margin = minutes(5);
// A failed run is tried again after this, doubling per failure in a row.
constexpr milliseconds k_first_retry = seconds(5);
constexpr milliseconds k_longest_retry = minutes(5);
// Runs are at least this far apart, whatever the output or the upstreams
// say: a token that expires at once, or 401s from many requests, must not
// run the command in a loop.
constexpr milliseconds k_shortest_gap = seconds(1);

std::atomic<std::uint64_t> g_token_epoch{0};

} // namespace

std::uint64_t token_epoch() {
  return g_token_epoch.load(std::memory_order_acquire);
}

Credential::Credential(util::Secret token, const config::KeyCommand& command, util::TimePoint now)
    : m_token(std::make_shared<const util::Secret>(std::move(token))), m_interval(command.refresh),
      m_expires(command.expires) {
  schedule(now);
}

bool Credential::valid(util::TimePoint now) const {
  return !m_rejected && (!m_expires || now < *m_expires);
}

bool Credential::start(util::TimePoint now) {
  if (m_running || !m_due || *m_due > now) {
    return false;
  }
  m_running = true;
  m_last_run = now;
  return true;
}

void Credential::succeed(util::Secret token, std::optional<util::TimePoint> expires, util::TimePoint now) {
  m_running = false;
  m_failures = 0;
  m_error.clear();
  ++m_refreshes;
  take(std::move(token), expires, now);
}

milliseconds Credential::fail(std::string reason, util::TimePoint now) {
  m_running = false;
  m_error = std::move(reason);
  milliseconds wait = k_first_retry;
  for (int i = 0; i < m_failures && wait < k_longest_retry; ++i) {
    wait *= 2;
  }
  wait = std::min(wait, k_longest_retry);
  ++m_failures;
  util::TimePoint next = now + wait;
  if (valid(now) && m_expires) {
    next = std::min(next, *m_expires); // the last chance before the token dies
  }
  m_due = not_before(next);
  return duration_cast<milliseconds>(*m_due - now);
}

bool Credential::reject(std::uint64_t generation, util::TimePoint now) {
  if (generation != m_generation) {
    return false;
  }
  if (!m_rejected) {
    m_rejected = true;
    m_due = not_before(now);
  }
  return true;
}

void Credential::adopt(util::Secret token, const config::KeyCommand& command, util::TimePoint now) {
  m_interval = command.refresh;
  m_failures = 0;
  m_error.clear();
  take(std::move(token), command.expires, now);
}

// A token that equals the current one keeps the current one and its
// generation: nothing changed for the requests that hold it.
void Credential::take(util::Secret token, std::optional<util::TimePoint> expires, util::TimePoint now) {
  if (!m_token->equals(token.reveal())) {
    m_token = std::make_shared<const util::Secret>(std::move(token));
    ++m_generation;
    g_token_epoch.fetch_add(1, std::memory_order_release);
  }
  m_expires = expires;
  m_rejected = false;
  schedule(now);
}

void Credential::schedule(util::TimePoint now) {
  std::optional<util::TimePoint> due;
  if (m_interval) {
    due = now + *m_interval;
  }
  if (m_expires) {
    milliseconds left = std::max(milliseconds(0), duration_cast<milliseconds>(*m_expires - now));
    util::TimePoint ahead = *m_expires - std::min(k_longest_margin, left / 4);
    due = due ? std::min(*due, ahead) : ahead;
  }
  m_due = due ? std::optional(not_before(*due)) : std::nullopt;
}

util::TimePoint Credential::not_before(util::TimePoint when) const {
  return m_last_run ? std::max(when, *m_last_run + k_shortest_gap) : when;
}

} // namespace keyshim::pool
