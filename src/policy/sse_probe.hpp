#pragma once
// Looking at the start of a 200 event stream before committing to it: some
// providers answer 200 and then send an error as the first event.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::policy {

// Offset just past the first complete event (terminated by a blank line:
// "\n\n", "\r\n\r\n" or "\r\r"), skipping comment-only blocks (": ping").
// nullopt while the first event is still incomplete.
std::optional<std::size_t> first_event_end(std::string_view buffered);

// When the first event is an error (`event: error`, a data payload with
// "type":"error", or an OpenAI-style {"error":...} payload), the error's
// type/code ("overloaded_error", "rate_limit_exceeded") or "error"; else nullopt.
std::optional<std::string> first_event_error(std::string_view first_event);

} // namespace keyshim::policy
