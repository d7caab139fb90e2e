// The tokens of key_cmd keys: what requests send, what a 401 does to a
// token, and the runs of the command that replace it (the thread running
// them is the server's; pool/credential.hpp has the schedule).
#include "pool/key_pool.hpp"

#include "pool/health_cell.hpp"

namespace keyshim::pool {
namespace {

// `text` with every occurrence of `secret` shown as its fingerprint: a
// command's error line must never carry the token it was to replace.
std::string without_secret(std::string text, const util::Secret& secret) {
  const std::string& value = secret.reveal();
  if (value.empty()) {
    return text;
  }
  for (std::size_t at = text.find(value); at != std::string::npos; at = text.find(value, at)) {
    text.replace(at, value.size(), secret.fingerprint());
  }
  return text;
}

} // namespace

SecretInUse KeyPool::secret(std::size_t index) const {
  const config::KeyConfig& key = m_keys.at(index);
  if (key.command) {
    HealthCell& cell = *m_cells[index];
    std::lock_guard lock(cell.mutex);
    if (cell.credential) {
      return {cell.credential->token(), cell.credential->generation()};
    }
  }
  // Not owned: a request holds its pool (through its state) while it uses
  // the secret, and the pool holds its keys.
  return {std::shared_ptr<const util::Secret>(std::shared_ptr<const util::Secret>(), &key.secret), 0};
}

std::string KeyPool::fingerprint(std::size_t index) const {
  return secret(index).secret->fingerprint();
}

bool KeyPool::reject_secret(std::size_t index, std::uint64_t generation) {
  if (!m_keys.at(index).command) {
    return false;
  }
  HealthCell& cell = *m_cells[index];
  std::lock_guard lock(cell.mutex);
  if (!cell.credential) {
    return false;
  }
  cell.credential->reject(generation, m_clock.now());
  return true;
}

bool KeyPool::awaiting_secret(std::size_t index) const {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  const util::TimePoint now = m_clock.now();
  cell.expire(now);
  return cell.credential && !cell.credential->valid(now) && cell.health.state == KeyState::available;
}

std::optional<std::vector<std::string>> KeyPool::begin_refresh(std::size_t index) {
  const config::KeyConfig& key = m_keys.at(index);
  if (!key.command) {
    return std::nullopt;
  }
  HealthCell& cell = *m_cells[index];
  std::lock_guard lock(cell.mutex);
  // A disabled key stays disabled until a reload: a new token would not help.
  if (!cell.credential || cell.health.state == KeyState::disabled || !cell.credential->start(m_clock.now())) {
    return std::nullopt;
  }
  return key.command->argv;
}

RefreshReport KeyPool::finish_refresh(std::size_t index, RefreshResult result) {
  HealthCell& cell = *m_cells.at(index);
  std::lock_guard lock(cell.mutex);
  RefreshReport report;
  if (!cell.credential) {
    return report;
  }
  Credential& credential = *cell.credential;
  const util::TimePoint now = m_clock.now();
  cell.expire(now);
  if (result.token) {
    // A cooling the command's failure caused ends with its success.
    bool cooled_by_it = cell.health.state == KeyState::cooling && !credential.error().empty() &&
                        cell.health.reason == credential.error();
    std::uint64_t before = credential.generation();
    credential.succeed(std::move(*result.token), result.expires, now);
    report.changed = credential.generation() != before;
    if (cooled_by_it) {
      cell.health.state = KeyState::available;
      cell.health.until = {};
      cell.health.reason.clear();
    }
  } else {
    milliseconds wait = credential.fail(without_secret(std::move(result.reason), *credential.token()), now);
    report.reason = credential.error();
    if (!credential.valid(now)) {
      cell.cool(now, nullptr, wait, credential.error());
      report.cooling = cell.health.state == KeyState::cooling;
    }
  }
  report.next = credential.due();
  report.expires = credential.expires();
  return report;
}

std::optional<util::TimePoint> KeyPool::next_refresh() const {
  std::optional<util::TimePoint> earliest;
  for (std::size_t i = 0; i < m_keys.size(); ++i) {
    if (!m_keys[i].command) {
      continue;
    }
    HealthCell& cell = *m_cells[i];
    std::lock_guard lock(cell.mutex);
    if (!cell.credential || cell.credential->running() || cell.health.state == KeyState::disabled) {
      continue;
    }
    std::optional<util::TimePoint> due = cell.credential->due();
    if (due && (!earliest || *due < *earliest)) {
      earliest = due;
    }
  }
  return earliest;
}

std::uint64_t KeyPool::token_epoch() {
  return pool::token_epoch();
}

// A reload kept key `index` (its cell is the previous pool's): the reload's
// run of its command replaces the token, and its settings the schedule.
void KeyPool::carry_token(std::size_t index) {
  const config::KeyConfig& key = m_keys[index];
  HealthCell& cell = *m_cells[index];
  std::lock_guard lock(cell.mutex);
  if (!key.command) {
    cell.credential.reset();
  } else if (cell.credential) {
    cell.credential->adopt(key.secret, *key.command, m_clock.now());
  } else {
    cell.credential.emplace(key.secret, *key.command, m_clock.now());
  }
}

std::optional<TokenStatus> KeyPool::token_status(std::size_t index) const {
  HealthCell& cell = *m_cells[index];
  std::lock_guard lock(cell.mutex);
  if (!cell.credential) {
    return std::nullopt;
  }
  const Credential& credential = *cell.credential;
  return TokenStatus{credential.expires(), credential.due(), credential.refreshes(), credential.error()};
}

} // namespace keyshim::pool
