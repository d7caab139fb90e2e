#pragma once
// Reusable upstream connections. An httplib::Client serialises whole requests
// behind one mutex, so each in-flight request needs its own; idle ones are
// kept per origin so the next request skips the TCP and TLS handshakes.
// Thread-safe.
#include "config/config.hpp"

#include <httplib.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::relay {

struct UpstreamTimeouts {
  std::chrono::milliseconds connect{10'000};
  // httplib's read timeout is a backstop only: the relay enforces the first
  // byte and idle timeouts itself, precisely, by stopping the client.
  std::chrono::milliseconds read{900'000};
  std::chrono::milliseconds write{60'000};
};

class UpstreamClients {
public:
  explicit UpstreamClients(std::size_t max_idle_per_origin = 32,
                           std::chrono::milliseconds max_idle_age = std::chrono::seconds(20));

  // An idle client for this origin, or a new one configured for relaying:
  // keep-alive, Nagle off, no transparent decompression, no URL re-encoding,
  // TLS verified against the system store plus `ca_file`.
  std::shared_ptr<httplib::Client> acquire(const config::UpstreamUrl& url,
                                           const std::optional<std::string>& ca_file,
                                           const UpstreamTimeouts& timeouts);

  // Return a client whose last exchange completed cleanly. Clients that failed
  // or were stopped must not come back: their connection state is unknown.
  void release(const config::UpstreamUrl& url, const std::optional<std::string>& ca_file,
               std::shared_ptr<httplib::Client> client);

  std::size_t idle_count() const;

private:
  struct Idle {
    std::shared_ptr<httplib::Client> client;
    std::chrono::steady_clock::time_point since;
  };
  static std::string origin_key(const config::UpstreamUrl& url, const std::optional<std::string>& ca_file);

  std::size_t m_max_idle_per_origin;
  std::chrono::milliseconds m_max_idle_age;
  mutable std::mutex m_mutex;
  std::map<std::string, std::vector<Idle>> m_idle;
};

} // namespace keyshim::relay
