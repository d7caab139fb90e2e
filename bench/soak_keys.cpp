// The soak's pool file over time: see soak_keys.hpp.
#include "soak_keys.hpp"

#include "soak_common.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace soak {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string key_id(int generation, int slot) {
  return std::to_string(generation) + "-" + std::to_string(slot);
}

} // namespace

bool KeyBook::write() const {
  std::string text = "[upstream]\nbase_url = \"http://127.0.0.1:" + std::to_string(m_opt.upstream_port) +
                     "\"\nauth = \"bearer\"\nstrategy = \"round-robin\"\nmax_attempts = 4\n"
                     "first_byte_timeout = \"3s\"\nidle_timeout = \"2s\"\nmax_cooldown = \"2s\"\n"
                     "max_wait = \"" +
                     std::to_string(k_max_wait_s) +
                     "s\"\nmax_concurrent = " + std::to_string(m_max_concurrent) + "\n";
  for (int k = 0; k < k_keys; ++k) {
    text += "\n[[keys]]\nlabel = \"k" + std::to_string(k) + "\"\nkey = \"sk-soak-" +
            key_id(m_generation[static_cast<std::size_t>(k)], k) + "-0123456789abcdef\"\n";
  }
  std::string tmp = m_opt.pool_file + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = fd >= 0 && ::close(fd) == 0 && ok && ::rename(tmp.c_str(), m_opt.pool_file.c_str()) == 0;
  if (!ok) {
    std::fprintf(stderr, "soak: cannot write the pool file \"%s\"\n", m_opt.pool_file.c_str());
  }
  return ok;
}

void KeyBook::replace(int slot) {
  auto& gen = m_generation[static_cast<std::size_t>(slot)];
  m_pending.emplace(key_id(gen, slot), 0);
  gen = m_next_generation++;
}

void KeyBook::replace_all() {
  for (int k = 0; k < k_keys; ++k) {
    replace(k);
  }
}

bool KeyBook::reload_and_confirm() {
  long long before = config_generation(m_opt.port);
  ::kill(m_opt.pid, SIGHUP);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    long long now = config_generation(m_opt.port);
    seen = before >= 0 && now > before;
  }
  if (seen) {
    std::lock_guard lock(m_mutex);
    for (const auto& [id, unused] : m_pending) {
      m_retired[id] = now_ns();
    }
    m_pending.clear();
  }
  return seen;
}

bool KeyBook::retired_before(const std::string& key_id, std::int64_t served_at_ns) {
  std::lock_guard lock(m_mutex);
  auto it = m_retired.find(key_id);
  return it != m_retired.end() &&
         served_at_ns > it->second + std::chrono::nanoseconds(k_retire_grace).count();
}

long long config_generation(int port) {
  int fd = connect_loopback(port, 5);
  std::string got;
  if (fd >= 0 && write_all(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) {
    char buf[16384];
    ssize_t n = 0;
    while (got.size() < (1u << 22) && (n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  if (fd >= 0) {
    ::close(fd);
  }
  constexpr std::string_view k_name = "\nkeyshim_config_generation ";
  auto at = got.find(k_name);
  return at == std::string::npos ? -1 : std::atoll(got.c_str() + at + k_name.size());
}

} // namespace soak
