#include "server/signal_watcher.hpp"

#include "server/shim_server.hpp"
#include "util/log.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>

namespace keyshim::server {
namespace {

// Sent by the destructor to wake the watcher; never meaningful from outside.
constexpr int k_wake_signal = SIGUSR2;

sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, k_wake_signal);
  return set;
}

timespec to_timespec(std::chrono::milliseconds d) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(d.count() / 1000);
  ts.tv_nsec = static_cast<long>((d.count() % 1000) * 1'000'000);
  return ts;
}

} // namespace

void SignalWatcher::block_signals() {
  sigset_t set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(ShimServer& server) : m_server(server), m_thread([this] { run(); }) {
}

SignalWatcher::~SignalWatcher() {
  m_stopping = true;
  pthread_kill(m_thread.native_handle(), k_wake_signal);
  m_thread.join();
  if (m_reloader.joinable()) {
    m_reloader.join();
  }
}

void SignalWatcher::request_reload() {
  std::lock_guard lock(m_reload_mutex);
  if (m_reloading) {
    m_reload_again = true;
    return;
  }
  if (m_reloader.joinable()) {
    m_reloader.join(); // the previous reload has finished: m_reloading is false
  }
  m_reloading = true;
  m_reloader = std::thread([this] {
    while (true) {
      m_server.reload();
      std::lock_guard relock(m_reload_mutex);
      if (!m_reload_again || m_stopping) {
        m_reloading = false;
        return;
      }
      m_reload_again = false;
    }
  });
}

void SignalWatcher::run() {
  sigset_t set = watched_signals();
  bool draining = false;
  std::chrono::steady_clock::time_point drain_deadline{};
  bool aborted = false;
  while (!m_stopping) {
    int sig = 0;
    if (draining && !aborted) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_deadline -
                                                                        std::chrono::steady_clock::now());
      timespec timeout = to_timespec(std::max(left, std::chrono::milliseconds(0)));
      sig = sigtimedwait(&set, nullptr, &timeout);
      if (sig < 0) {
        if (std::chrono::steady_clock::now() >= drain_deadline) {
          util::log_warn("drain timeout reached: cutting {} in-flight requests", m_server.in_flight());
          m_server.abort_in_flight();
          aborted = true;
        }
        continue;
      }
    } else if (sigwait(&set, &sig) != 0) {
      continue;
    }
    if (sig == k_wake_signal) {
      continue;
    }
    if (sig == SIGHUP) {
      util::log_info("SIGHUP: reloading the pool file");
      request_reload();
      continue;
    }
    if (draining) {
      util::log_warn("second {}: exiting now", sig == SIGINT ? "SIGINT" : "SIGTERM");
      std::_Exit(1);
    }
    draining = true;
    drain_deadline = std::chrono::steady_clock::now() + m_server.drain_timeout();
    m_server.begin_shutdown();
  }
}

} // namespace keyshim::server
