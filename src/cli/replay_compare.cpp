// The comparison `keyshim replay` prints after the replay's answer: the
// capture and the replay side by side, then the first events of each.
#include "cli/replay_capture.hpp"
#include "cli/status_table.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>

#include <vector>

namespace keyshim::cli {
namespace {

constexpr std::size_t k_column = 30; // the captured column's width
constexpr std::size_t k_events_shown = 3;
constexpr std::size_t k_event_width = 100;

std::string status_text(int status) {
  return status == 0 ? "none (the client left)" : std::to_string(status);
}

std::string time_text(const std::optional<milliseconds>& time) {
  return time ? util::format_duration(*time) : "-";
}

std::string usage_text(const policy::Usage& usage) {
  if (!usage.input && !usage.output) {
    return "-";
  }
  auto figure = [](const std::optional<std::uint64_t>& n) { return n ? std::to_string(*n) : "?"; };
  return fmt::format("in {}, out {}", figure(usage.input), figure(usage.output));
}

std::string cut(std::string text, std::size_t width) {
  if (text.size() > width) {
    text.resize(width - 3);
    text += "...";
  }
  return text;
}

std::string row(std::string_view name, const std::string& captured, const std::string& replay) {
  return fmt::format("{:<14}{:<{}} {}\n", name, cut(printable(captured), k_column), k_column,
                     cut(printable(replay), k_column * 2));
}

// The first events of an event stream, one line each (an event's lines
// joined by spaces), or the start of any other body on one line.
std::vector<std::string> first_events(const std::string& body, bool events) {
  std::vector<std::string> out;
  if (!events) {
    std::string line = body.substr(0, k_event_width * 2);
    std::replace(line.begin(), line.end(), '\n', ' ');
    if (!line.empty()) {
      out.push_back(cut(printable(line), k_event_width));
    }
    return out;
  }
  std::string event;
  std::size_t start = 0;
  while (start < body.size() && out.size() < k_events_shown) {
    std::size_t end = std::min(body.find('\n', start), body.size());
    std::string line = body.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() && !event.empty()) {
      out.push_back(cut(printable(event), k_event_width));
      event.clear();
    } else if (!line.empty()) {
      event += (event.empty() ? "" : " ") + line;
    }
    start = end + 1;
  }
  if (!event.empty() && out.size() < k_events_shown) {
    out.push_back(cut(printable(event), k_event_width)); // the kept part ended mid-event
  }
  return out;
}

bool is_event_stream(const std::string& content_type) {
  return content_type.rfind("text/event-stream", 0) == 0;
}

std::string events_block(std::string_view title, const std::vector<std::string>& events) {
  std::string out = fmt::format("{}:\n", title);
  if (events.empty()) {
    return out + "  (no body)\n";
  }
  for (const std::string& event : events) {
    out += fmt::format("  {}\n", event);
  }
  return out;
}

std::string replay_key_text(const ReplayAnswer& replay, const std::string& key) {
  if (!replay.served_key.empty()) {
    return replay.served_key + (key.empty() ? "" : " (--key)");
  }
  return key.empty() ? "chosen by keyshim" : key + " (--key)";
}

} // namespace

std::string render_comparison(const CapturedExchange& captured, const ReplayAnswer& replay,
                              const std::string& key) {
  std::string captured_key = captured.served_key.empty() ? "-" : captured.served_key;
  if (captured.chain.find(',') != std::string::npos) {
    captured_key += " (" + captured.chain + ")";
  }
  std::string out =
      fmt::format("{:<14}{:<{}} {}\n", "", fmt::format("capture {}", captured.id), k_column, "replay");
  out += row("status", status_text(captured.status),
             replay.error.empty() || replay.status != 0 ? status_text(replay.status) : "no answer");
  out += row("key", captured_key, replay_key_text(replay, key));
  out += row("first byte", time_text(captured.ttfb), time_text(replay.ttfb));
  out += row("total", time_text(captured.duration), time_text(replay.duration));
  out += row("usage", usage_text(captured.usage), usage_text(replay.usage));
  const bool replay_events = is_event_stream(replay.content_type);
  out += events_block(captured.response_events ? "first events, capture" : "body, capture",
                      first_events(captured.response_body, captured.response_events));
  out += events_block(replay_events ? "first events, replay" : "body, replay",
                      first_events(replay.body_start, replay_events));
  return out;
}

} // namespace keyshim::cli
