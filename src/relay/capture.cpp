#include "relay/capture.hpp"

namespace keyshim::relay {
namespace {

std::size_t fields_bytes(const Fields& fields) {
  std::size_t n = fields.capacity() * sizeof(Fields::value_type);
  for (const auto& [name, value] : fields) {
    n += name.capacity() + value.capacity();
  }
  return n;
}

} // namespace

// Capacities, not sizes: what the allocator holds is what the bound is about.
std::size_t Capture::bytes() const {
  std::size_t n = sizeof(Capture) + pool.capacity() + model.capacity() + method.capacity() +
                  target.capacity() + error.capacity() + request_body.data.capacity() +
                  response_body.data.capacity() + fields_bytes(request_head) + fields_bytes(response_head);
  n += chain.capacity() * sizeof(CaptureStep);
  for (const CaptureStep& step : chain) {
    n += step.key.capacity() + step.verdict.capacity() + step.reason.capacity();
  }
  return n;
}

std::uint64_t CaptureRing::push(Capture capture, std::size_t size) {
  capture.id = m_next_id++;
  std::uint64_t id = capture.id;
  m_bytes += capture.bytes();
  m_entries.push_back(std::move(capture));
  while (m_entries.size() > size) {
    m_bytes -= m_entries.front().bytes();
    m_entries.pop_front();
  }
  return id;
}

// Ids are consecutive in the deque: the entry's place is its distance from the first.
const Capture* CaptureRing::find(std::uint64_t id) const {
  if (m_entries.empty() || id < m_entries.front().id || id > m_entries.back().id) {
    return nullptr;
  }
  return &m_entries[static_cast<std::size_t>(id - m_entries.front().id)];
}

} // namespace keyshim::relay
