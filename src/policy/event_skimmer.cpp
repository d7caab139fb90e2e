// The usage meter's fast path: one search per piece for `"usage`, and a look
// back from the end of the piece for the start of the event it ends in.
#include "policy/event_skimmer.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace keyshim::policy::detail {
namespace {

constexpr std::string_view k_name = "\"usage";
constexpr std::string_view k_metadata = "Metadata";

// Bytes kept of one event that is still passed over; a longer event goes to
// the reader, which applies max_event to it exactly.
constexpr std::size_t k_keep_limit = std::size_t{64} * 1024;

// Enough of a cut name's two sides to judge it: its 5 kept bytes and what
// follows ("Metadata", quote, blanks, colon, brace), else it counts as a maybe.
constexpr std::size_t k_joint_bytes = 40;

bool is_line_end(char c) {
  return c == '\n' || c == '\r';
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Whether the name at `pos` in `text` may start a usage object: the name
// (with "Metadata"), a quote, a colon and a brace, with blanks between. Text
// that ends first, or a line end (a later data line may go on), is a maybe,
// which counts as a yes.
bool may_name_usage(std::string_view text, std::size_t pos) {
  std::size_t i = pos + k_name.size();
  std::string_view rest = text.substr(i, k_metadata.size());
  if (rest == k_metadata) {
    i += k_metadata.size();
  } else if (rest.size() < k_metadata.size() && k_metadata.starts_with(rest) && !rest.empty()) {
    return true;
  }
  for (char wanted : {'"', ':', '{'}) {
    if (wanted != '"') {
      while (i < text.size() && is_blank(text[i])) {
        ++i;
      }
    }
    if (i >= text.size() || is_line_end(text[i])) {
      return true;
    }
    if (text[i] != wanted) {
      return false;
    }
    ++i;
  }
  return true;
}

// The first position in `text` at or after `from` where a name that may start
// a usage object begins, else npos.
std::size_t find_usage_name(std::string_view text, std::size_t from) {
  for (std::size_t pos = text.find(k_name, from); pos != std::string_view::npos;
       pos = text.find(k_name, pos + 1)) {
    if (may_name_usage(text, pos)) {
      return pos;
    }
  }
  return std::string_view::npos;
}

// The last CR or LF before `end`, else npos.
std::size_t last_line_end(std::string_view bytes, std::size_t end) {
#ifdef __GLIBC__
  const void* lf = ::memrchr(bytes.data(), '\n', end);
  std::size_t after_lf = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - bytes.data()) + 1 : 0;
  const void* cr = ::memrchr(bytes.data() + after_lf, '\r', end - after_lf);
  if (cr) {
    return static_cast<std::size_t>(static_cast<const char*>(cr) - bytes.data());
  }
  return lf ? after_lf - 1 : std::string_view::npos;
#else
  for (std::size_t i = end; i > 0; --i) {
    if (is_line_end(bytes[i - 1])) {
      return i - 1;
    }
  }
  return std::string_view::npos;
#endif
}

// How many line ends a run of CR and LF bytes holds: CRLF is one.
std::size_t count_line_ends(std::string_view run) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < run.size(); ++count) {
    i += run[i] == '\r' && i + 1 < run.size() && run[i + 1] == '\n' ? 2 : 1;
  }
  return count;
}

// The line-end bytes `text` ends with.
std::string_view trailing_line_ends(std::string_view text) {
  std::size_t begin = text.size();
  while (begin > 0 && is_line_end(text[begin - 1])) {
    --begin;
  }
  return text.substr(begin);
}

} // namespace

EventSkimmer::EventSkimmer(EventSink& sink, std::size_t max_event) : m_reader(sink, max_event) {
}

void EventSkimmer::take(std::string_view bytes) {
  if (m_reading) {
    read(bytes);
  } else {
    skim(bytes);
  }
}

void EventSkimmer::read(std::string_view bytes) {
  m_reader.take(bytes);
  m_reading = !m_reader.between_events();
}

void EventSkimmer::skim(std::string_view bytes) {
  std::size_t start = first_candidate(bytes);
  if (start == std::string_view::npos) {
    std::size_t next = last_event_start(bytes, bytes.size());
    if (next != std::string_view::npos) {
      m_kept.clear();
      bytes.remove_prefix(next);
    }
    keep(bytes);
    return;
  }
  // The candidate's event starts in this piece (then nothing kept belongs to
  // it) or began in the kept bytes: the reader gets it from its start.
  if (start == k_in_kept) {
    m_reader.take(m_kept);
    start = 0;
  }
  m_kept.clear();
  if (m_kept.capacity() > k_keep_limit) {
    release(m_kept);
  }
  read(bytes.substr(start));
}

std::size_t EventSkimmer::first_candidate(std::string_view bytes) const {
  if (!m_kept.empty()) {
    // A name cut by the end of the previous piece: the kept tail joined to
    // this piece's start, on the stack (this runs for most pieces).
    std::array<char, k_joint_bytes> joint{};
    std::string_view kept =
        std::string_view(m_kept).substr(m_kept.size() - std::min(m_kept.size(), k_name.size() - 1));
    std::string_view head = bytes.substr(0, joint.size() - kept.size());
    std::copy(kept.begin(), kept.end(), joint.begin());
    std::copy(head.begin(), head.end(), joint.begin() + static_cast<std::ptrdiff_t>(kept.size()));
    std::size_t tail = kept.size();
    std::size_t pos = find_usage_name(std::string_view(joint.data(), kept.size() + head.size()), 0);
    if (pos != std::string_view::npos && pos < tail) {
      return k_in_kept;
    }
  }
  std::size_t pos = find_usage_name(bytes, 0);
  if (pos == std::string_view::npos) {
    return pos;
  }
  std::size_t start = last_event_start(bytes, pos);
  if (start != std::string_view::npos) {
    return start;
  }
  return m_kept.empty() ? 0 : k_in_kept;
}

// A run of line ends that holds two ends an event: the first ends its last
// line, the second a blank line. Lines before the run are not empty (the run
// is whole), except at the start of a piece that began between events, where
// every line end ends a blank line.
std::size_t EventSkimmer::last_event_start(std::string_view bytes, std::size_t end) const {
  for (std::size_t i = end; i > 0;) {
    std::size_t last = last_line_end(bytes, i);
    if (last == std::string_view::npos) {
      break;
    }
    std::size_t begin = last;
    while (begin > 0 && is_line_end(bytes[begin - 1])) {
      --begin;
    }
    std::string_view run = bytes.substr(begin, last + 1 - begin);
    if (begin == 0 && m_kept.empty()) {
      return last + 1;
    }
    std::size_t ends = count_line_ends(run);
    if (begin == 0) {
      std::string joined(trailing_line_ends(m_kept));
      joined.append(run);
      ends = count_line_ends(joined);
    }
    if (ends >= 2) {
      return last + 1;
    }
    i = begin;
  }
  return std::string_view::npos;
}

// The bytes of an event that goes on in the next piece. An event too long to
// keep goes to the reader instead, which skips it if it outgrows max_event.
void EventSkimmer::keep(std::string_view part) {
  if (part.size() > k_keep_limit - std::min(m_kept.size(), k_keep_limit)) {
    m_reader.take(m_kept);
    release(m_kept);
    read(part); // the reader finishes the event
    return;
  }
  m_kept.append(part);
}

} // namespace keyshim::policy::detail
