// Incremental event stream framing for the usage meter. The meter sees every
// byte the relay passes, so this is on the proxy's hot path: a line that lies
// whole in one piece is read in place, only a line cut by a piece boundary is
// copied, and only data values are kept until the event ends.
#include "policy/event_stream_reader.hpp"

#include <cstring>

namespace keyshim::policy::detail {
namespace {

constexpr std::string_view k_bom = "\xEF\xBB\xBF";

// Buffers above this size are released at the end of their event, so that one
// large event does not pin its memory for the rest of a long stream.
constexpr std::size_t k_kept_capacity = std::size_t{64} * 1024;

// The first CR or LF at or after `from`, else bytes.size(). Two memchr
// passes (vectorised in glibc) instead of a loop over every byte: a relayed
// stream runs through here at the proxy's speed.
std::size_t find_line_end(std::string_view bytes, std::size_t from) {
  const char* begin = bytes.data() + from;
  std::size_t left = bytes.size() - from;
  const void* lf = std::memchr(begin, '\n', left);
  std::size_t until_lf = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - begin) : left;
  const void* cr = std::memchr(begin, '\r', until_lf);
  std::size_t end = cr ? static_cast<std::size_t>(static_cast<const char*>(cr) - begin) : until_lf;
  return from + end;
}

} // namespace

EventStreamReader::EventStreamReader(EventSink& sink, std::size_t max_event)
    : m_sink(sink), m_max_event(max_event) {
}

void EventStreamReader::take(std::string_view bytes) {
  std::size_t pos = 0;
  if (m_after_cr && !bytes.empty()) {
    m_after_cr = false;
    if (bytes.front() == '\n') {
      pos = 1; // the second half of a CRLF split between pieces
    }
  }
  while (pos < bytes.size()) {
    std::size_t end = find_line_end(bytes, pos);
    std::string_view part = bytes.substr(pos, end - pos);
    if (end == bytes.size()) {
      hold(part); // the line goes on in the next piece
      return;
    }
    if (m_line_bytes == 0) {
      m_line_bytes = part.size();
      count(part.size());
      end_line(part);
    } else {
      hold(part);
      end_line(m_line);
    }
    pos = end + 1;
    if (bytes[end] == '\r') {
      if (pos == bytes.size()) {
        m_after_cr = true;
      } else if (bytes[pos] == '\n') {
        ++pos;
      }
    }
  }
}

void EventStreamReader::hold(std::string_view part) {
  m_line_bytes += part.size();
  count(part.size());
  if (!m_skipping) {
    m_line.append(part);
  }
}

void EventStreamReader::count(std::size_t bytes) {
  m_event_bytes += bytes;
  if (!m_skipping && m_event_bytes > m_max_event) {
    m_skipping = true;
    release(m_line);
    release(m_data);
  }
}

void EventStreamReader::end_line(std::string_view line) {
  if (m_line_bytes == 0) {
    end_event();
  } else if (!m_skipping) {
    read_field(line);
  }
  m_first_line = false;
  m_line.clear();
  m_line_bytes = 0;
}

void EventStreamReader::read_field(std::string_view line) {
  if (m_first_line && line.substr(0, k_bom.size()) == k_bom) {
    line.remove_prefix(k_bom.size());
  }
  if (line.empty() || line.front() == ':') {
    return; // a comment, such as a keep-alive ": ping"
  }
  std::size_t colon = line.find(':');
  std::string_view name = line.substr(0, colon);
  if (name != "data") {
    return; // event, id, retry: nothing the meter needs
  }
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  if (m_has_data) {
    m_data += '\n';
  }
  m_data.append(value);
  m_has_data = true;
}

void EventStreamReader::end_event() {
  if (m_has_data && !m_skipping) {
    m_sink.on_event(m_data);
  }
  m_data.clear();
  if (m_data.capacity() > k_kept_capacity) {
    release(m_data);
  }
  if (m_line.capacity() > k_kept_capacity) {
    release(m_line);
  }
  m_has_data = false;
  m_skipping = false;
  m_event_bytes = 0;
}

} // namespace keyshim::policy::detail
