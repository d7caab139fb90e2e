#pragma once
// The one deadline a relayed request has at any moment, as pure arithmetic on
// monotonic time: the relay arms a timer for due() and, when it fires, asks
// expired(now). Progress only moves the deadline, so a busy stream never
// re-arms its timer per piece. Tested with a fake clock, without sleeping.
#include <chrono>

namespace keyshim::relay {

using MonoTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

class Watchdog {
public:
  enum class Kind {
    none,       // nothing to wait for (choosing a key, writing an answer)
    connect,    // TCP connect and TLS handshake: connect_timeout from the start
    first_byte, // request sent, nothing back yet: first_byte_timeout from the start
    idle,       // bytes are flowing: idle_timeout since the last progress
    waiting,    // no key yet: until max_wait ends or a cooldown does, whichever is first
  };

  // A new deadline of `kind`, `limit` from `now`.
  void start(Kind kind, MonoTime now, milliseconds limit);
  // Bytes moved at `now`: an idle deadline starts counting again.
  void note_progress(MonoTime now);
  void stop() { m_kind = Kind::none; }

  Kind kind() const { return m_kind; }
  MonoTime due() const { return m_base + m_limit; }
  bool expired(MonoTime now) const { return m_kind != Kind::none && now >= due(); }

private:
  Kind m_kind = Kind::none;
  MonoTime m_base{};
  milliseconds m_limit{0};
};

} // namespace keyshim::relay
