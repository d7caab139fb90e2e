#include "server/token_refresher.hpp"

#include "config/secret_source.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::server {
namespace {

using namespace std::chrono;

// The wall clock may jump (a suspended laptop resumes): a sleep is at most
// this long before the schedule is looked at again.
constexpr milliseconds k_longest_sleep = minutes(5);

bool has_key_cmd(const relay::PoolState& state) {
  for (const relay::ServedPool& pool : state.pools) {
    for (std::size_t i = 0; i < pool.keys->size(); ++i) {
      if (pool.keys->key(i).command) {
        return true;
      }
    }
  }
  return false;
}

// "in 55m", or "now" for a time that has come.
std::string from_now(util::TimePoint when, util::TimePoint now) {
  return when <= now ? "now" : "in " + util::format_duration(duration_cast<milliseconds>(when - now));
}

// What status and the log say about a failed run: its first stderr line
// when it printed one (what the command itself says is wrong), else how it
// failed. Never its output.
std::string reason_of(const config::SecretOutcome& outcome) {
  return outcome.error_line.empty() ? "key_cmd " + outcome.error : "key_cmd: " + outcome.error_line;
}

} // namespace

TokenRefresher::TokenRefresher(const relay::StateSource& states, std::function<void()> changed)
    : m_states(states), m_changed(std::move(changed)) {
}

TokenRefresher::~TokenRefresher() {
  stop();
}

void TokenRefresher::watch() {
  std::lock_guard lock(m_mutex);
  if (!m_thread.joinable() && !m_stopping && has_key_cmd(*m_states.current())) {
    m_thread = std::thread([this] { run(); });
  }
  m_woken = true;
  m_wake.notify_one();
}

void TokenRefresher::run_due() {
  std::lock_guard lock(m_mutex);
  m_woken = true;
  m_wake.notify_one();
}

void TokenRefresher::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    m_wake.notify_one();
  }
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

// Run what is due, then sleep until the next run is due or someone wakes us.
void TokenRefresher::run() {
  std::unique_lock lock(m_mutex);
  while (!m_stopping) {
    m_woken = false;
    lock.unlock();
    std::optional<util::TimePoint> next = run_due_commands(*m_states.current());
    lock.lock();
    milliseconds sleep = k_longest_sleep;
    if (next) {
      auto until_due = duration_cast<milliseconds>(*next - util::system_clock().now());
      sleep = std::clamp(until_due + milliseconds(1), milliseconds(0), k_longest_sleep);
    }
    m_wake.wait_for(lock, sleep, [this] { return m_stopping || m_woken; });
  }
}

// Every due run of the state's keys, one after the other. Returns when the
// next one is due.
std::optional<util::TimePoint> TokenRefresher::run_due_commands(const relay::PoolState& state) {
  bool ran = false;
  for (const relay::ServedPool& pool : state.pools) {
    for (std::size_t i = 0; i < pool.keys->size(); ++i) {
      if (std::optional<std::vector<std::string>> argv = pool.keys->begin_refresh(i)) {
        refresh(pool, i, *argv);
        ran = true;
      }
    }
  }
  if (ran && m_changed) {
    m_changed();
  }
  std::optional<util::TimePoint> next;
  for (const relay::ServedPool& pool : state.pools) {
    std::optional<util::TimePoint> due = pool.keys->next_refresh();
    if (due && (!next || *due < *next)) {
      next = due;
    }
  }
  return next;
}

// One run of key `index`'s command, its result handed to the pool and logged.
void TokenRefresher::refresh(const relay::ServedPool& pool, std::size_t index,
                             const std::vector<std::string>& argv) {
  config::CommandLimits limits;
  limits.collect_stderr = true; // for status; the log is keyshim's, not the command's
  config::SecretOutcome outcome = config::secret_from_command(argv, limits);
  const bool got = outcome.secret.has_value();
  std::string reason = got ? std::string() : reason_of(outcome);
  pool::RefreshReport report = pool.keys->finish_refresh(
      index, pool::RefreshResult{std::move(outcome.secret), outcome.expires, std::move(reason)});
  const util::TimePoint now = util::system_clock().now();
  const std::string& label = pool.keys->key(index).label;
  std::string next = report.next ? "; next run " + from_now(*report.next, now) : std::string();
  std::string expires = report.expires ? ", expires " + from_now(*report.expires, now) : std::string();
  if (got) {
    util::log(report.changed ? util::LogLevel::info : util::LogLevel::debug,
              "key {} of pool {}: {} token {}{}{}", label, pool.config->name, report.changed ? "new" : "same",
              pool.keys->fingerprint(index), expires, next);
  } else if (report.cooling) {
    util::log_warn("key {} of pool {} cooling until its next run: {}{}", label, pool.config->name,
                   report.reason, next);
  } else {
    util::log_warn("key {} of pool {}: {}; its token still serves{}{}", label, pool.config->name,
                   report.reason, expires, next);
  }
}

} // namespace keyshim::server
