#pragma once
// Splitting a text/event-stream into events as its bytes arrive, in pieces
// split anywhere (internal header of the usage meter).
#include "policy/stream_decoder.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace keyshim::policy::detail {

// Gives a buffer's memory back (clear() keeps it): a stream's buffers are
// emptied for good once an event or the stream is over.
inline void release(std::string& buffer) {
  std::string().swap(buffer);
}

// Receives the data of each complete event: its `data:` lines joined by "\n".
class EventSink {
public:
  virtual void on_event(std::string_view data) = 0;

protected:
  ~EventSink() = default;
};

// Event stream framing as WHATWG HTML ("interpreting an event stream") defines
// it: lines end in LF, CRLF or CR, a CR ending one piece and an LF starting the
// next being one line end; an event ends at a blank line; comment lines and
// fields other than `data` are ignored; an event without data, or cut by the
// end of the stream, is never dispatched. Only the current event is held, and
// at most `max_event` bytes of it: a longer event is skipped whole. As a
// DecodedSink it reads a decoder's output directly. Not thread-safe.
class EventStreamReader final : public DecodedSink {
public:
  EventStreamReader(EventSink& sink, std::size_t max_event);

  // Reads the next bytes of the stream, dispatching every event they complete.
  void take(std::string_view bytes) override;
  // Whether the stream stands between two events: past its first line, no
  // byte of the next event read, no CR whose LF may follow.
  bool between_events() const {
    return m_line_bytes == 0 && m_event_bytes == 0 && !m_has_data && !m_skipping && !m_after_cr &&
           !m_first_line;
  }

private:
  void hold(std::string_view part);
  void count(std::size_t bytes);
  void end_line(std::string_view line);
  void read_field(std::string_view line);
  void end_event();

  EventSink& m_sink;
  std::size_t m_max_event;
  std::string m_line;            // the start of a line that began in an earlier piece
  std::string m_data;            // the current event's data so far
  std::size_t m_line_bytes = 0;  // length of the current line so far, held or not
  std::size_t m_event_bytes = 0; // length of the current event's lines so far
  bool m_has_data = false;       // the current event has a data field (maybe empty)
  bool m_skipping = false;       // the current event outgrew max_event
  bool m_after_cr = false;       // the last byte was a CR: an LF next ends no line
  bool m_first_line = true;      // the stream's first line, which may start with a BOM
};

} // namespace keyshim::policy::detail
