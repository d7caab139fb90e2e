#pragma once
// The tool session a request belongs to, so that its requests stay on one
// key (prompt caches are per organisation or key): Claude Code's
// `X-Claude-Code-Session-Id`, Codex's `session-id` (`session_id` before
// 0.171), else a top-level `"prompt_cache_key"` of a JSON body sent to an
// OpenAI API that has one (a path ending in `/chat/completions` or
// `/responses`; Codex sends it too). A request naming none is its
// connection's (the relay's business).
#include <cstdint>
#include <string_view>

namespace keyshim::policy {

// The session's identity: a 64-bit hash of the id (no id bytes are kept,
// however long), never 0; 0 when the request names no session. `header_id`
// is the value of the session header the relay found ("" for none). The
// body is read only without one and only for those two APIs' paths in
// `target`, and scanned only when it contains the member's name at all:
// other bodies cost one memmem (a few GB/s), Anthropic's and Gemini's none.
std::uint64_t request_session(std::string_view header_id, std::string_view target, std::string_view body);

} // namespace keyshim::policy
