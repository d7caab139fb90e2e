// A per-session deadline for the soak's blocking WebSocket peers: Beast's
// synchronous calls have no timeout of their own, so a watchdog thread shuts
// the socket down (which ends any blocked read or write) when no progress
// was reported within `limit`.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace soak {

class Watchdog {
public:
  Watchdog(int fd, std::chrono::seconds limit)
      : m_fd(fd), m_limit(limit), m_deadline(std::chrono::steady_clock::now() + limit),
        m_thread([this] { watch(); }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_wake.notify_one();
    m_thread.join();
  }

  // Progress: the deadline moves to `limit` from now.
  void kick() {
    std::lock_guard lock(m_mutex);
    m_deadline = std::chrono::steady_clock::now() + m_limit;
  }
  bool fired() {
    std::lock_guard lock(m_mutex);
    return m_fired;
  }

private:
  void watch() {
    std::unique_lock lock(m_mutex);
    while (!m_done) {
      if (m_wake.wait_until(lock, m_deadline) == std::cv_status::timeout && !m_done &&
          std::chrono::steady_clock::now() >= m_deadline) {
        m_fired = true;
        ::shutdown(m_fd, SHUT_RDWR);
        return;
      }
    }
  }

  int m_fd;
  std::chrono::seconds m_limit;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::chrono::steady_clock::time_point m_deadline;
  bool m_done = false;
  bool m_fired = false;
  std::thread m_thread;
};

} // namespace soak
