#pragma once
// Reading a response's token usage while its body passes through, without
// holding or altering a byte of what is relayed.
//
// Counting rules. The API is recognised from each payload's shape:
//   OpenAI chat completions: input = usage.prompt_tokens, output =
//     usage.completion_tokens (cached and reasoning tokens are inside both).
//     A stream has usage only in its last chunk, and only when the request
//     set stream_options.include_usage; otherwise usage is unknown.
//   OpenAI Responses API: input = usage.input_tokens, output =
//     usage.output_tokens; streamed, from the `response` of the
//     response.completed event (or response.incomplete / response.failed).
//   Anthropic Messages: input = usage.input_tokens +
//     cache_creation_input_tokens + cache_read_input_tokens, output =
//     usage.output_tokens. Streamed, the input fields come from message_start's
//     message.usage and from any message_delta that repeats them, and the
//     output from the last message_delta (a running total); message_start's
//     output placeholder is not counted.
//   Gemini generateContent: input = usageMetadata.promptTokenCount, output =
//     candidatesTokenCount + thoughtsTokenCount. Every streamed chunk repeats
//     the running totals.
// In every case the latest non-null value of each field wins.
//
// What is read: a text/event-stream body event by event; an application/json
// body (or one without a Content-Type), including Gemini's streamed JSON
// array, whole at finish(). Bodies of other types, of an unknown or stacked
// Content-Encoding, JSON bodies over k_max_body_bytes and events over
// k_max_event_bytes are not read. A body that does not parse, or that ends
// early, leaves usage unknown (JSON) or at the counts of the events that were
// complete (event streams: a cut stream's counts can be lower than what the
// provider bills).
#include "policy/types.hpp"

#include <cstddef>
#include <memory>
#include <string_view>

namespace keyshim::policy {

// A meter for one response body. Cheap on the relay's hot path: an event
// stream costs one search of each piece for `"usage` and a look back for the
// last event's start; only events that name a usage object are split into
// lines and copied, and only those with one are parsed. Nothing it is given can make it
// throw. Not thread-safe; one per response.
class UsageMeter {
public:
  // The longest event read (a longer one is skipped) and the largest decoded
  // JSON body read (a larger one leaves usage unknown).
  static constexpr std::size_t k_max_event_bytes = std::size_t{1} << 20;
  static constexpr std::size_t k_max_body_bytes = std::size_t{4} << 20;

  // From the response head: its Content-Type and Content-Encoding values.
  UsageMeter(std::string_view content_type, std::string_view content_encoding);
  ~UsageMeter();
  UsageMeter(UsageMeter&&) noexcept;
  UsageMeter& operator=(UsageMeter&&) noexcept;

  // The next body bytes exactly as relayed (still encoded), split anywhere.
  void feed(std::string_view piece) noexcept;
  // The body ended, complete or not: the usage read. Later feeds are ignored
  // and later calls return the same.
  Usage finish() noexcept;

private:
  struct Reading;
  // A response's Reading comes from the per-thread small-block cache
  // (util::SizeClassCache): one is made and dropped per response.
  struct Dispose {
    void operator()(Reading* reading) const noexcept;
  };
  template <class... Args> static std::unique_ptr<Reading, Dispose> make_reading(Args&&... args);
  std::unique_ptr<Reading, Dispose> m_reading; // nullptr once finished or when unreadable
  Usage m_usage;
};

} // namespace keyshim::policy
