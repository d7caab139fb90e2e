#pragma once
// Health that survives a restart (`state = true`, docs/behaviour.md §12):
// the keys' coolings, disabled keys, their models' coolings and today's
// usage, by pool name and key fingerprint, in a private JSON file. Read
// once before the first request; written at most once per interval when
// something changed, off the event loop on a thread of its own, and at the
// end of the drain. A damaged or foreign file is ignored with a warning.
#include "relay/pool_state.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace keyshim::server {

class StateKeeper {
public:
  StateKeeper(std::string path, const relay::StateSource& states,
              std::chrono::milliseconds interval = std::chrono::minutes(1));
  ~StateKeeper(); // stop() if it still runs
  StateKeeper(const StateKeeper&) = delete;
  StateKeeper& operator=(const StateKeeper&) = delete;

  // Give the current pools what the file holds for them. Call before serving.
  void restore();
  // Save every `interval`, when the pools' health changed, until stop().
  void start();
  // End the saving thread, then save one last time (the drain is over).
  void stop();
  // Write the file now if what it would hold changed since the last write.
  void save();

  const std::string& path() const { return m_path; }

private:
  void run();

  std::string m_path;
  const relay::StateSource& m_states;
  std::chrono::milliseconds m_interval;
  std::mutex m_mutex; // guards m_stopping and m_last_text
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::string m_last_text; // what the file holds now, as far as this process knows
  std::thread m_thread;
};

} // namespace keyshim::server
