#pragma once
// The thread that runs key_cmd commands for new tokens (docs/behaviour.md
// §10), so that neither the event loop nor a reload waits on one. It sleeps
// until the next run is due in the published pool state, or until it is
// woken (a 401 refused a token, a reload published new keys); then it runs
// the due commands one at a time, each bounded like any key_cmd (10 s,
// 64 KiB) with its stderr collected, hands each result to its pool, and
// tells the server, which wakes the requests waiting for a key. It starts
// with the first state that has a key_cmd key; without one it never exists.
#include "relay/pool_state.hpp"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace keyshim::server {

class TokenRefresher final : public relay::TokenRefresh {
public:
  // `changed` runs on the refresher's thread after runs that changed a key's
  // token or health.
  TokenRefresher(const relay::StateSource& states, std::function<void()> changed);
  // stop().
  ~TokenRefresher() override;
  TokenRefresher(const TokenRefresher&) = delete;
  TokenRefresher& operator=(const TokenRefresher&) = delete;

  // A new state was published: start when it has key_cmd keys, and look at
  // what is due. Any thread.
  void watch();
  // relay::TokenRefresh: look at what is due now. Any thread.
  void run_due() override;
  // End the thread, after the command it runs, if any (at most its 10 s).
  void stop();

private:
  void run();
  std::optional<util::TimePoint> run_due_commands(const relay::PoolState& state);
  void refresh(const relay::ServedPool& pool, std::size_t index, const std::vector<std::string>& argv);

  const relay::StateSource& m_states;
  std::function<void()> m_changed;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_woken = false;
  bool m_stopping = false;
  std::thread m_thread;
};

} // namespace keyshim::server
