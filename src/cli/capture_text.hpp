#pragma once
// How `keyshim log` and `keyshim show` print captured exchanges (the
// /captures answers): pure functions of the JSON, tested without an instance.
#include "util/json.hpp"

#include <string>
#include <string_view>

namespace keyshim::cli {

// One line per exchange: id, time, pool, model, method and target, status,
// chain, duration: `12  2026-12-02 23:20:20.303  default  gpt-4o  POST
// /v1/chat/completions  200  k0:429 cool, k1:200 ok  12ms`.
std::string capture_log_line(const util::Json& entry);

// The same, shorter, for a narrow view of one key's exchanges: id, time of
// day, status and chain first, then method, target, model and duration:
// `12  23:20:20  200  k0:429 cool, k1:200 ok  POST /v1/chat/completions
// gpt-4o  12ms`.
std::string capture_brief_line(const util::Json& entry);

// One exchange in full, for a person: the summary, then the request and the
// response, each head field on a line, JSON bodies pretty-printed and the
// events of a stream one per line.
std::string capture_show_text(const util::Json& entry);

// `value` as indented JSON (two spaces), strings escaped as JSON writes them.
std::string pretty_json(const util::Json& value);

// The events of an event stream, one per line: each event's lines joined by
// a space, comments and blank lines left out.
std::string event_lines(std::string_view stream);

// `text` with control characters other than newline and tab shown as `?`:
// a captured body must not move a terminal's cursor.
std::string printable(std::string_view text);

} // namespace keyshim::cli
