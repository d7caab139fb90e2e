#include "relay/attempt_plan.hpp"

#include <algorithm>

namespace keyshim::relay {

using namespace std::chrono;

AttemptPlan::AttemptPlan(std::size_t keys, int max_attempts)
    : m_excluded(keys, false), m_max_attempts(max_attempts) {
}

void AttemptPlan::begin() {
  if (m_renewal) {
    m_renewal.reset(); // the mask allowed only its key
    ++m_renewals;
  } else {
    ++m_attempts;
  }
}

void AttemptPlan::renew(std::size_t index, MonoTime until) {
  m_renewed.resize(m_excluded.size(), false); // allocated by the rare request that needs it
  m_renewed.at(index) = true;
  m_renewal = Renewal{index, until};
  m_repeat = index;
}

const std::vector<bool>& AttemptPlan::mask() {
  if (!m_repeat) {
    return m_excluded;
  }
  m_only.assign(m_excluded.size(), true);
  m_only[*m_repeat] = false;
  return m_only;
}

bool AttemptPlan::drop_repeat() {
  if (!m_repeat) {
    return false;
  }
  m_excluded[*m_repeat] = true;
  m_repeat.reset();
  m_renewal.reset();
  return true;
}

void AttemptPlan::after_failure(std::size_t index, policy::Action action, bool cooled) {
  m_retried.resize(m_excluded.size(), false); // allocated by the first failure: most requests have none
  m_cooled.resize(m_excluded.size(), false);
  if (action == policy::Action::retry_same_key && !m_retried[index]) {
    m_retried[index] = true;
    m_repeat = index;
    return;
  }
  m_excluded[index] = true;
  m_cooled[index] = cooled;
  m_repeat.reset();
}

void AttemptPlan::rekey(const pool::KeyPool& from, const pool::KeyPool& to) {
  std::vector<bool> excluded(to.size(), false);
  std::vector<bool> retried(to.size(), false);
  std::vector<bool> cooled(to.size(), false);
  std::vector<bool> renewed(to.size(), false);
  std::optional<std::size_t> repeat;
  std::optional<Renewal> renewal;
  for (std::size_t i = 0; i < from.size() && i < m_excluded.size(); ++i) {
    // By the token each key sends now: a key_cmd key's may be newer than its file's.
    const std::string fingerprint = from.fingerprint(i);
    for (std::size_t j = 0; j < to.size(); ++j) {
      if (to.fingerprint(j) == fingerprint) {
        excluded[j] = m_excluded[i];
        retried[j] = is_set(m_retried, i);
        cooled[j] = is_set(m_cooled, i);
        renewed[j] = is_set(m_renewed, i);
        repeat = m_repeat == i ? std::optional<std::size_t>(j) : repeat;
        if (m_renewal && m_renewal->key == i) {
          renewal = Renewal{j, m_renewal->until};
        }
        break;
      }
    }
  }
  m_excluded = std::move(excluded);
  m_retried = std::move(retried);
  m_cooled = std::move(cooled);
  m_renewed = std::move(renewed);
  m_repeat = repeat;
  m_renewal = renewal;
}

Answer AttemptPlan::final_answer() const {
  return m_last_error ? *m_last_error : unreachable_answer(m_tried);
}

std::optional<AttemptPlan::Wait> AttemptPlan::wait_for(const pool::Selection& selection,
                                                       milliseconds max_wait, MonoTime now,
                                                       util::TimePoint wall_now) {
  if (max_wait.count() == 0) {
    return std::nullopt;
  }
  if (!m_wait_since) {
    m_wait_since = now;
  }
  const MonoTime until = *m_wait_since + max_wait;
  if (now >= until) {
    return std::nullopt;
  }
  std::optional<MonoTime> cooldown_end;
  if (selection.earliest_available) {
    cooldown_end = now + duration_cast<milliseconds>(*selection.earliest_available - wall_now);
  }
  if (!selection.busy && !(cooldown_end && *cooldown_end < until)) {
    return std::nullopt;
  }
  return Wait{cooldown_end ? std::min(*cooldown_end, until) : until, until};
}

milliseconds AttemptPlan::waited(MonoTime now) const {
  return m_wait_since ? duration_cast<milliseconds>(now - *m_wait_since) : milliseconds(0);
}

} // namespace keyshim::relay
