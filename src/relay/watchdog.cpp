#include "relay/watchdog.hpp"

namespace keyshim::relay {

void Watchdog::start(Kind kind, MonoTime now, milliseconds limit) {
  m_kind = kind;
  m_base = now;
  m_limit = limit;
}

void Watchdog::note_progress(MonoTime now) {
  if (m_kind == Kind::idle) {
    m_base = now;
  }
}

} // namespace keyshim::relay
