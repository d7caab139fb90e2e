#include "server/state_keeper.hpp"

#include "pool/saved_health.hpp"
#include "util/json.hpp"
#include "util/log.hpp"
#include "util/private_file.hpp"

#include <utility>

namespace keyshim::server {
namespace {

using util::Json;

// The file's format; a file of another version is someone else's.
constexpr std::uint64_t k_state_version = 1;
// A state file is a few hundred bytes per key.
constexpr std::size_t k_max_file_bytes = 16 * 1024 * 1024;

std::string state_text(const relay::PoolState& state) {
  Json pools = Json::make_array();
  for (const relay::ServedPool& served : state.pools) {
    Json keys = Json::make_array();
    for (const pool::SavedKey& key : served.keys->save()) {
      keys.push_back(pool::to_json(key));
    }
    Json entry = Json::make_object();
    entry.add("name", Json::make_string(served.config->name));
    entry.add("keys", std::move(keys));
    pools.push_back(std::move(entry));
  }
  Json document = Json::make_object();
  document.add("keyshim_state", Json::make_number(k_state_version));
  document.add("pools", std::move(pools));
  return document.dump() + "\n";
}

std::vector<pool::SavedKey> saved_keys(const Json& pool) {
  std::vector<pool::SavedKey> keys;
  if (const Json* items = pool.find("keys")) {
    for (const Json& item : items->items()) {
      if (auto key = pool::saved_key_from_json(item)) {
        keys.push_back(std::move(*key));
      }
    }
  }
  return keys;
}

// Restores each pool of `state` from the pool of the same name in `document`.
struct Restored {
  std::size_t keys = 0;
  std::size_t cooling = 0;
  std::size_t disabled = 0;
};

Restored restore_pools(const Json& document, const relay::PoolState& state) {
  Restored restored;
  const Json* pools = document.find("pools");
  if (pools == nullptr) {
    return restored;
  }
  for (const Json& pool : pools->items()) {
    std::string name = pool.string_at("name").value_or("");
    for (const relay::ServedPool& served : state.pools) {
      if (served.config->name != name) {
        continue;
      }
      restored.keys += served.keys->restore(saved_keys(pool), served.config->upstream.max_cooldown);
      pool::Counts counts = served.keys->counts();
      restored.cooling += static_cast<std::size_t>(counts.cooling);
      restored.disabled += static_cast<std::size_t>(counts.disabled);
    }
  }
  return restored;
}

// Whether `state` asks for health to be kept: a usable pool file with
// `state = true`. A state without one keeps what the file holds for a later run.
bool keeps_state(const relay::PoolState* state) {
  return state != nullptr && state->config && state->config->server.state;
}

} // namespace

StateKeeper::StateKeeper(std::string path, const relay::StateSource& states,
                         std::chrono::milliseconds interval)
    : m_path(std::move(path)), m_states(states), m_interval(interval) {
}

StateKeeper::~StateKeeper() {
  if (m_thread.joinable()) {
    stop();
  }
}

void StateKeeper::restore() {
  std::shared_ptr<const relay::PoolState> state = m_states.current();
  if (!keeps_state(state.get())) {
    return;
  }
  std::string error;
  std::optional<std::string> text = util::read_private_file(m_path, k_max_file_bytes, error);
  if (!text) {
    if (!error.empty()) {
      util::log_warn("saved health ignored: {}", error);
    }
    return;
  }
  std::optional<Json> document = util::parse_json(*text);
  const Json* version = document ? document->find("keyshim_state") : nullptr;
  if (!version || version->as_unsigned() != k_state_version) {
    util::log_warn("saved health ignored: {} is not a keyshim state file of version {} (it is "
                   "replaced at the next save)",
                   m_path, k_state_version);
    return;
  }
  Restored restored = restore_pools(*document, *state);
  util::log_info("health restored from {}: {} keys, {} cooling, {} disabled", m_path, restored.keys,
                 restored.cooling, restored.disabled);
  std::lock_guard lock(m_mutex);
  m_last_text = std::move(*text);
}

void StateKeeper::save() {
  std::shared_ptr<const relay::PoolState> state = m_states.current();
  if (!keeps_state(state.get())) {
    return;
  }
  std::string text = state_text(*state);
  std::lock_guard lock(m_mutex);
  if (text == m_last_text) {
    return;
  }
  std::string error;
  if (!util::write_private_file(m_path, text, error)) {
    util::log_warn("health not saved: {}", error);
    return;
  }
  util::log_debug("health saved to {}", m_path);
  m_last_text = std::move(text);
}

void StateKeeper::start() {
  // Also with `state = false`: a reload may turn it on.
  m_thread = std::thread([this] { run(); });
}

void StateKeeper::run() {
  std::unique_lock lock(m_mutex);
  while (!m_wake.wait_for(lock, m_interval, [this] { return m_stopping; })) {
    lock.unlock();
    save();
    lock.lock();
  }
}

void StateKeeper::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
  }
  save();
}

} // namespace keyshim::server
