#pragma once
// Passing over the events of a stream that cannot carry usage without
// reading them (internal header of the usage meter).
#include "policy/event_stream_reader.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace keyshim::policy::detail {

// In front of an EventStreamReader: only events whose bytes name a usage
// object reach it. An event can count only if its data has a member
// "usage" or "usageMetadata" whose value is an object (has_usage_object), and
// that name lies whole inside one data line, so it is in the raw bytes too.
// So between events the skimmer searches each piece once for `"usage`, and
// an event without one is passed over unread: no line is split and no data
// copied. Only the bytes of an event that has not ended with its piece are
// kept, so that a name found later can still be read from its event's start.
// An event with the name (followed by `":` and `{`, or by a line end, which
// a later data line may continue) goes to the reader from its start, and the
// reader reads on until a piece ends between events. Events the reader
// would dispatch without a usage object are the only ones passed over, so the
// counts are the reader's exactly. Not thread-safe.
class EventSkimmer final : public DecodedSink {
public:
  EventSkimmer(EventSink& sink, std::size_t max_event);

  void take(std::string_view bytes) override;

private:
  // first_candidate: the event began in the kept bytes.
  static constexpr std::size_t k_in_kept = std::string_view::npos - 1;

  void skim(std::string_view bytes);
  void read(std::string_view bytes);
  // Where, in `bytes`, the first event that may carry usage starts, else npos.
  std::size_t first_candidate(std::string_view bytes) const;
  // The end of the last blank line before `end` in `bytes`, else npos.
  std::size_t last_event_start(std::string_view bytes, std::size_t end) const;
  void keep(std::string_view part);

  EventStreamReader m_reader;
  std::string m_kept;    // the bytes of the current event so far, while skimming
  bool m_reading = true; // the reader has the stream (always at its start: a BOM)
};

} // namespace keyshim::policy::detail
