#include "server/readiness.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#ifdef __linux__
#include <systemd/sd-daemon.h>
#endif

namespace keyshim::server {
namespace {

#ifdef __linux__
unsigned long long monotonic_usec() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<unsigned long long>(now.tv_sec) * 1'000'000ULL +
         static_cast<unsigned long long>(now.tv_nsec) / 1'000ULL;
}
#endif

} // namespace

Readiness::Readiness() {
#ifdef __linux__
  const char* socket = std::getenv("NOTIFY_SOCKET");
  m_enabled = socket != nullptr && *socket != '\0';
#endif
}

void Readiness::send(const std::string& message) {
#ifdef __linux__
  // sd_notify reads NOTIFY_SOCKET itself and returns 0 when it is unset.
  // A failure to notify is worth a debug line, never more: systemd reports
  // a missing READY=1 itself, as a start timeout.
  if (int r = ::sd_notify(0, message.c_str()); r < 0) {
    util::log_debug("cannot notify the service manager: {}", std::strerror(-r));
  }
#else
  (void)message;
#endif
}

void Readiness::ready(const std::string& status) {
  if (!m_enabled) {
    return;
  }
  std::lock_guard lock(m_mutex);
  m_last_status = status;
  send(fmt::format("READY=1\nSTATUS={}", status));
}

void Readiness::reloading() {
  if (!m_enabled) {
    return;
  }
#ifdef __linux__
  std::lock_guard lock(m_mutex);
  send(fmt::format("RELOADING=1\nMONOTONIC_USEC={}", monotonic_usec()));
#endif
}

void Readiness::stopping() {
  if (!m_enabled) {
    return;
  }
  std::lock_guard lock(m_mutex);
  send("STOPPING=1");
}

void Readiness::status(const std::string& status) {
  if (!m_enabled) {
    return;
  }
  std::lock_guard lock(m_mutex);
  if (status == m_last_status) {
    return;
  }
  m_last_status = status;
  send(fmt::format("STATUS={}", status));
}

} // namespace keyshim::server
