// Reading the first event of a 200 event stream (WHATWG "server-sent events"
// framing) to tell a real start from an error wearing a 200.
#include "policy/sse_probe.hpp"

#include "policy/text.hpp"
#include "util/json.hpp"

namespace keyshim::policy {
namespace {

struct Line {
  std::string_view text;
  std::size_t next = 0;  // offset just past the terminator
  bool complete = false; // a terminator was found
};

// The line starting at `pos`; lines end in "\r\n", "\n" or "\r". Two
// searches (memchr) rather than a loop over every byte: a stream's first
// event is read this way once or twice.
Line read_line(std::string_view buffer, std::size_t pos) {
  std::string_view rest = buffer.substr(pos);
  std::size_t end = rest.find('\n');
  std::size_t cr = rest.substr(0, end).find('\r');
  if (cr != std::string_view::npos) {
    std::size_t next = pos + cr + 1;
    if (next < buffer.size() && buffer[next] == '\n') {
      ++next;
    }
    return Line{rest.substr(0, cr), next, true};
  }
  if (end != std::string_view::npos) {
    return Line{rest.substr(0, end), pos + end + 1, true};
  }
  return Line{rest, buffer.size(), false};
}

std::size_t skip_bom(std::string_view buffer) {
  return buffer.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
}

struct Event {
  std::string type; // the `event:` field, "" when absent
  std::string data; // `data:` lines joined by "\n"
};

// Field name and value of a non-comment line ("data: x" -> "data", "x").
std::pair<std::string_view, std::string_view> split_field(std::string_view line) {
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return {line, {}};
  }
  std::string_view value = line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  return {line.substr(0, colon), value};
}

// The fields of the first block that has any; comment-only blocks are skipped.
Event parse_first_event(std::string_view text) {
  Event event;
  bool has_field = false;
  bool has_data = false;
  std::size_t pos = skip_bom(text);
  while (pos < text.size()) {
    Line line = read_line(text, pos);
    pos = line.next;
    if (line.text.empty()) {
      if (has_field) {
        break;
      }
      continue;
    }
    if (line.text.front() == ':') {
      continue;
    }
    has_field = true;
    auto [name, value] = split_field(line.text);
    if (name == "event") {
      event.type = std::string(value);
    } else if (name == "data") {
      if (has_data) {
        event.data += '\n';
      }
      event.data += value;
      has_data = true;
    }
  }
  return event;
}

// Upstream text ends up in logs and /status: keep it to a short identifier.
std::string identifier_or_error(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() > 64) {
    return "error";
  }
  for (char c : *text) {
    if (!(detail::is_alpha(c) || detail::is_digit(c) || c == '_' || c == '-' || c == '.')) {
      return "error";
    }
  }
  return *text;
}

// The most specific name an error object carries: OpenAI's "code"
// ("rate_limit_exceeded") over its "type" ("requests"), Anthropic's "type"
// ("overloaded_error"), Gemini's "status" ("UNAVAILABLE").
std::optional<std::string> error_name(const util::Json& error) {
  for (std::string_view field : {"code", "type", "status"}) {
    if (auto value = error.string_at(field); value && !value->empty()) {
      return value;
    }
  }
  return std::nullopt;
}

std::optional<std::string> payload_error(const util::Json& payload) {
  if (!payload.is_object()) {
    return std::nullopt;
  }
  const util::Json* error = payload.find("error");
  if (error != nullptr && error->is_object()) {
    return identifier_or_error(error_name(*error));
  }
  if (error != nullptr && error->is_string() && !error->as_string().empty()) {
    return std::string("error");
  }
  // OpenAI Responses streams: {"type":"error","code":"...","message":"..."}.
  if (payload.string_at("type") == "error") {
    return identifier_or_error(payload.string_at("code"));
  }
  return std::nullopt;
}

} // namespace

std::optional<std::size_t> first_event_end(std::string_view buffered) {
  bool has_field = false;
  std::size_t pos = skip_bom(buffered);
  while (true) {
    Line line = read_line(buffered, pos);
    if (!line.complete) {
      return std::nullopt;
    }
    pos = line.next;
    if (line.text.empty()) {
      if (has_field) {
        return pos;
      }
      continue; // the end of a comment-only (keep-alive) block
    }
    if (line.text.front() != ':') {
      has_field = true;
    }
  }
}

// Every error recognised here spells "error" in the event's text: an
// `event: error` line, an "error" member, a "type" of "error". JSON may
// spell it with escapes (\u0065rror), so only an event with neither "error"
// nor a backslash is known to be no error without parsing it; the JSON parse
// is most of what the probe costs every stream (callgrind: about 7,000 of
// the 71,000 instructions a held stream cost keyshim before this check).
std::optional<std::string> first_event_error(std::string_view first_event) {
  if (first_event.find("error") == std::string_view::npos &&
      first_event.find('\\') == std::string_view::npos) {
    return std::nullopt;
  }
  Event event = parse_first_event(first_event);
  std::optional<util::Json> payload = util::parse_json(detail::trim(event.data));
  std::optional<std::string> error = payload ? payload_error(*payload) : std::nullopt;
  if (error) {
    return error;
  }
  if (event.type == "error") {
    if (payload && payload->is_object()) {
      return identifier_or_error(error_name(*payload));
    }
    return std::string("error");
  }
  return std::nullopt;
}

} // namespace keyshim::policy
