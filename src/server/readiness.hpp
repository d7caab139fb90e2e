#pragma once
// Tells the service manager how keyshim is doing: systemd's notify protocol
// (Type=notify) through libsystemd's sd_notify. Every call is a no-op when
// NOTIFY_SOCKET was unset at construction (not started by systemd, or not
// as Type=notify) and on macOS, where launchd has no such protocol.
// Thread-safe: the event loop, the signal watcher and the reloader call it.
#include <mutex>
#include <string>

namespace keyshim::server {

class Readiness {
public:
  // Reads NOTIFY_SOCKET once. It stays set: key_cmd helpers cannot speak for
  // keyshim anyway, since the unit's NotifyAccess=main only hears keyshim's pid.
  Readiness();

  bool enabled() const { return m_enabled; }
  // READY=1 with a STATUS= line: the pool is loaded and the socket is served.
  void ready(const std::string& status);
  // RELOADING=1 (with MONOTONIC_USEC=, as systemd 253 asks): a reload began;
  // ready() ends it.
  void reloading();
  // STOPPING=1: the drain has begun.
  void stopping();
  // STATUS=, only when it differs from the last one sent.
  void status(const std::string& status);

private:
  void send(const std::string& message);

  bool m_enabled = false;
  std::mutex m_mutex;
  std::string m_last_status;
};

} // namespace keyshim::server
