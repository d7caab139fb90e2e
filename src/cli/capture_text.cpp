#include "cli/capture_text.hpp"

#include <fmt/format.h>

namespace keyshim::cli {
namespace {

using util::Json;

std::string str(const Json& entry, std::string_view name) {
  return printable(entry.string_at(name).value_or(""));
}

long long num(const Json& entry, std::string_view name) {
  const Json* value = entry.find(name);
  return value && value->is_number() ? static_cast<long long>(value->as_number()) : 0;
}

// "2026-12-02T23:20:20.303Z" -> "2026-12-02 23:20:20.303"
std::string time_text(std::string time) {
  if (time.size() > 10 && time[10] == 'T') {
    time[10] = ' ';
  }
  if (!time.empty() && time.back() == 'Z') {
    time.pop_back();
  }
  return time;
}

std::string chain_text(const Json& entry, bool with_detail) {
  std::string out;
  const Json* chain = entry.find("chain");
  for (const Json& step : chain ? chain->items() : Json::Array{}) {
    out += out.empty() ? "" : ", ";
    long long status = num(step, "status");
    out += fmt::format("{}:{} {}", str(step, "key"), status == 0 ? std::string("-") : std::to_string(status),
                       str(step, "verdict"));
    if (with_detail) {
      std::string reason = str(step, "reason");
      out += reason.empty() ? fmt::format(" {}ms", num(step, "ms"))
                            : fmt::format(" ({}) {}ms", reason, num(step, "ms"));
    }
  }
  return out.empty() ? "-" : out;
}

void indent(std::string& out, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

void pretty(const Json& value, int depth, std::string& out) {
  if (value.is_array() && !value.items().empty()) {
    out += "[\n";
    for (std::size_t i = 0; i < value.items().size(); ++i) {
      indent(out, depth + 1);
      pretty(value.items()[i], depth + 1, out);
      out += i + 1 < value.items().size() ? ",\n" : "\n";
    }
    indent(out, depth);
    out += ']';
    return;
  }
  if (value.is_object() && !value.members().empty()) {
    out += "{\n";
    for (std::size_t i = 0; i < value.members().size(); ++i) {
      const auto& [name, member] = value.members()[i];
      indent(out, depth + 1);
      out += Json::make_string(name).dump() + ": ";
      pretty(member, depth + 1, out);
      out += i + 1 < value.members().size() ? ",\n" : "\n";
    }
    indent(out, depth);
    out += '}';
    return;
  }
  out += value.dump();
}

std::string body_text(const Json& message, bool events) {
  std::string body = message.string_at("body").value_or("");
  if (message.find("body_base64") && message.find("body_base64")->as_bool()) {
    return fmt::format("({} bytes that are not text; `--json` has them in base64)\n", body.size() * 3 / 4);
  }
  if (body.empty()) {
    return "";
  }
  if (events) {
    return printable(event_lines(body));
  }
  if (std::optional<Json> json = util::parse_json(body)) {
    return pretty_json(*json) + "\n";
  }
  return printable(body) + (body.back() == '\n' ? "" : "\n");
}

std::string message_text(const Json& message, bool events) {
  std::string out;
  const Json* head = message.find("head");
  for (const Json& field : head ? head->items() : Json::Array{}) {
    if (field.items().size() == 2) {
      out += fmt::format("{}: {}\n", printable(field.items()[0].as_string()),
                         printable(field.items()[1].as_string()));
    }
  }
  std::string body = body_text(message, events);
  if (!body.empty()) {
    out += "\n" + body;
  }
  if (message.find("body_truncated") && message.find("body_truncated")->as_bool()) {
    out += fmt::format("(body cut: the first {} of {} bytes were kept)\n",
                       message.string_at("body").value_or("").size(), num(message, "body_size"));
  }
  return out;
}

std::string usage_text(const Json& entry) {
  const Json* usage = entry.find("usage");
  if (!usage || !usage->is_object()) {
    return "";
  }
  return fmt::format("usage: {} in, {} out\n", num(*usage, "input_tokens"), num(*usage, "output_tokens"));
}

} // namespace

std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7F) {
      c = '?';
    }
  }
  return out;
}

std::string pretty_json(const Json& value) {
  std::string out;
  pretty(value, 0, out);
  return out;
}

std::string event_lines(std::string_view stream) {
  std::string out;
  std::string event;
  auto end_event = [&] {
    if (!event.empty()) {
      out += event + "\n";
      event.clear();
    }
  };
  while (!stream.empty()) {
    std::size_t newline = stream.find('\n');
    std::string_view line = stream.substr(0, newline);
    stream = newline == std::string_view::npos ? std::string_view{} : stream.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      end_event();
    } else if (line.front() != ':') {
      event += (event.empty() ? "" : " ") + std::string(line);
    }
  }
  end_event();
  return out;
}

std::string capture_log_line(const Json& entry) {
  std::string model = str(entry, "model");
  long long status = num(entry, "status");
  std::string replay = entry.find("replay_of") && entry.find("replay_of")->is_number()
                           ? fmt::format("  replay of {}", num(entry, "replay_of"))
                           : "";
  return fmt::format("{:>4}  {}  {}  {}  {} {}  {}  {}  {}ms{}", num(entry, "id"),
                     time_text(str(entry, "time")), str(entry, "pool"), model.empty() ? "-" : model,
                     str(entry, "method"), str(entry, "target"),
                     status == 0 ? std::string("-") : std::to_string(status), chain_text(entry, false),
                     num(entry, "duration_ms"), replay);
}

std::string capture_brief_line(const Json& entry) {
  std::string time = time_text(str(entry, "time"));
  std::string model = str(entry, "model");
  long long status = num(entry, "status");
  return fmt::format(
      "{:>4}  {}  {}  {}  {} {}  {}  {}ms", num(entry, "id"), time.size() >= 19 ? time.substr(11, 8) : time,
      status == 0 ? std::string("-") : std::to_string(status), chain_text(entry, false), str(entry, "method"),
      str(entry, "target"), model.empty() ? "-" : model, num(entry, "duration_ms"));
}

std::string capture_show_text(const Json& entry) {
  std::string model = str(entry, "model");
  std::string out =
      fmt::format("capture {}  {}  pool {}  model {}\n", num(entry, "id"), time_text(str(entry, "time")),
                  str(entry, "pool"), model.empty() ? "-" : model);
  long long status = num(entry, "status");
  const Json* ttfb = entry.find("ttfb_ms");
  out +=
      fmt::format("{} {} -> {} in {}ms{}{}\n", str(entry, "method"), str(entry, "target"),
                  status == 0 ? std::string("no answer (the client left)") : std::to_string(status),
                  num(entry, "duration_ms"),
                  ttfb && ttfb->is_number() ? fmt::format(" (first byte {}ms)", num(entry, "ttfb_ms")) : "",
                  entry.find("stream") && entry.find("stream")->as_bool() ? ", streamed" : "");
  out += fmt::format("chain: {}\n", chain_text(entry, true));
  out += usage_text(entry);
  if (std::string error = str(entry, "error"); !error.empty()) {
    out += fmt::format("error: {}\n", error);
  }
  if (const Json* request = entry.find("request")) {
    out += "\n> request\n" + message_text(*request, false);
  }
  if (const Json* response = entry.find("response")) {
    bool events = response->find("events") && response->find("events")->as_bool();
    out += "\n< response\n" + message_text(*response, events);
  }
  return out;
}

} // namespace keyshim::cli
