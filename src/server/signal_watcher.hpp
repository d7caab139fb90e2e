#pragma once
// Signals for a running server, handled on a dedicated thread with sigwait:
// nothing runs in signal-handler context, so reload and shutdown may take
// locks, log and allocate.
//   SIGHUP          reload the pool file, on a thread of its own: a slow
//                   key_cmd must delay neither requests nor a SIGTERM
//   SIGINT/SIGTERM  drain: stop accepting, give in-flight responses up to
//                   drain_timeout, then cut them; a second one exits at once
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <mutex>
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
  // Stops the watcher thread (and waits for a reload in progress).
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

private:
  void run();
  // Start a reload, or queue one more if a reload is running (a SIGHUP sent
  // after the file changed again must not be lost).
  void request_reload();

  ShimServer& m_server;
  std::atomic<bool> m_stopping{false};
  std::mutex m_reload_mutex;
  bool m_reloading = false;
  bool m_reload_again = false;
  std::thread m_reloader;
  std::thread m_thread;
};

} // namespace keyshim::server
