#include "server/connection_registry.hpp"

namespace keyshim::server {

ConnectionRegistry::Member::Member(ConnectionRegistry& registry) : m_registry(&registry) {
  registry.link(*this);
}

ConnectionRegistry::Member::~Member() {
  if (m_registry) {
    m_registry->unlink(*this);
  }
}

ConnectionRegistry::~ConnectionRegistry() {
  for (Member* member = m_first; member; member = member->m_next) {
    member->m_registry = nullptr;
  }
}

void ConnectionRegistry::link(Member& member) {
  member.m_prev = m_last;
  member.m_next = nullptr;
  (m_last ? m_last->m_next : m_first) = &member;
  m_last = &member;
  ++m_size;
}

void ConnectionRegistry::unlink(Member& member) {
  (member.m_prev ? member.m_prev->m_next : m_first) = member.m_next;
  (member.m_next ? member.m_next->m_prev : m_last) = member.m_prev;
  member.m_prev = member.m_next = nullptr;
  --m_size;
}

std::vector<std::shared_ptr<ConnectionRegistry::Member>> ConnectionRegistry::hold_all() const {
  std::vector<std::shared_ptr<Member>> held;
  held.reserve(m_size);
  for (Member* member = m_first; member; member = member->m_next) {
    if (auto owner = member->hold()) { // a member being destroyed is leaving anyway
      held.push_back(std::move(owner));
    }
  }
  return held;
}

// Draining or aborting may close a connection, and a closed connection may
// be destroyed and unlinked: walk a held copy, never the list itself.
void ConnectionRegistry::drain_all() {
  for (const auto& member : hold_all()) {
    member->drain();
  }
}

void ConnectionRegistry::abort_all() {
  for (const auto& member : hold_all()) {
    member->abort();
  }
}

} // namespace keyshim::server
