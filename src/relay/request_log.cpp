#include "relay/request_log.hpp"

#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) {
      out += ',';
    }
    out += part;
  }
  return out;
}

std::string tokens_text(const std::optional<std::uint64_t>& tokens) {
  return tokens ? std::to_string(*tokens) : "?";
}

} // namespace

std::string format_request_text(const RequestRecord& r) {
  std::string line = fmt::format("{} {} {}", r.method, r.path, r.status);
  if (!r.pool.empty()) {
    line += fmt::format(" pool={}", r.pool);
  }
  if (!r.model.empty()) {
    line += fmt::format(" model={}", r.model);
  }
  if (!r.key_label.empty()) {
    line += fmt::format(" key={}", r.key_label);
  }
  if (r.replay_of) {
    line += fmt::format(" replay={}", *r.replay_of);
  }
  line += fmt::format(" attempts={}", r.attempts);
  if (!r.chain.empty()) {
    line += fmt::format(" chain={}", join(r.chain));
  }
  if (r.ttfb) {
    line += fmt::format(" ttfb={}", util::format_duration(*r.ttfb));
  }
  line += fmt::format(" dur={} bytes={}", util::format_duration(r.duration), r.bytes);
  if (r.input_tokens || r.output_tokens) {
    line += fmt::format(" in={} out={}", tokens_text(r.input_tokens), tokens_text(r.output_tokens));
  }
  if (r.stream) {
    line += " stream";
  }
  if (!r.websocket.empty()) {
    line += fmt::format(" websocket=\"{}\"", r.websocket);
  }
  if (!r.error.empty()) {
    line += fmt::format(" error=\"{}\"", r.error);
  }
  return line;
}

void log_request(const RequestRecord& r) {
  util::Logger& logger = util::Logger::instance();
  // A client that hangs up (Ctrl-C in a CLI) is routine, as nginx's 499 is.
  util::LogLevel level = r.error.empty() || r.client_left ? util::LogLevel::info : util::LogLevel::warn;
  if (!logger.enabled(level)) {
    return;
  }
  using util::Json;
  auto text = [](const std::string& value) { return Json::make_string(value); };
  auto count = [](const auto& value) { return value ? Json::make_number(*value) : Json(); };
  Json fields;
  fields.add("method", text(r.method))
      .add("path", text(r.path))
      .add("status", Json::make_number(r.status))
      .add("pool", text(r.pool))
      .add("model", text(r.model))
      .add("key", text(r.key_label))
      .add("attempts", Json::make_number(r.attempts))
      .add("chain", text(join(r.chain)))
      .add("ttfb_ms", r.ttfb ? Json::make_number(r.ttfb->count()) : Json())
      .add("dur_ms", Json::make_number(r.duration.count()))
      .add("bytes", Json::make_number(r.bytes))
      .add("stream", Json::make_bool(r.stream))
      .add("input_tokens", count(r.input_tokens))
      .add("output_tokens", count(r.output_tokens));
  if (r.replay_of) {
    fields.add("replay_of", Json::make_number(*r.replay_of));
  }
  if (!r.websocket.empty()) {
    fields.add("websocket", text(r.websocket));
  }
  if (!r.error.empty()) {
    fields.add("error", text(r.error));
  }
  logger.record(level, format_request_text(r), fields);
}

} // namespace keyshim::relay
