#pragma once
// Signals for a running server, handled on a dedicated thread with sigwait:
// nothing runs in signal-handler context, so reload and shutdown may take
// locks, log and allocate.
//   SIGHUP          reload the pool file
//   SIGINT/SIGTERM  drain: stop accepting, give in-flight responses up to
//                   drain_timeout, then cut them; a second one exits at once
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <thread>

namespace keyshim::server {

class ShimServer;

class SignalWatcher {
public:
  // Block SIGINT, SIGTERM, SIGHUP and the watcher's own wake-up signal in the
  // calling thread, so threads started afterwards inherit the mask. Call
  // first thing in `serve`, before any thread exists.
  static void block_signals();

  explicit SignalWatcher(ShimServer& server);
  // Stops the watcher thread.
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

private:
  void run();

  ShimServer& m_server;
  std::atomic<bool> m_stopping{false};
  std::thread m_thread;
};

} // namespace keyshim::server
