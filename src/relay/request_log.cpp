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
  std::vector<util::LogField> fields = {
      {"method", r.method},
      {"path", r.path},
      {"status", std::to_string(r.status), true},
      {"pool", r.pool},
      {"model", r.model},
      {"key", r.key_label},
      {"attempts", std::to_string(r.attempts), true},
      {"chain", join(r.chain)},
      {"ttfb_ms", r.ttfb ? std::to_string(r.ttfb->count()) : "null", true},
      {"dur_ms", std::to_string(r.duration.count()), true},
      {"bytes", std::to_string(r.bytes), true},
      {"stream", r.stream ? "true" : "false", true},
      {"input_tokens", r.input_tokens ? std::to_string(*r.input_tokens) : "null", true},
      {"output_tokens", r.output_tokens ? std::to_string(*r.output_tokens) : "null", true},
  };
  if (!r.error.empty()) {
    fields.push_back({"error", r.error});
  }
  logger.record(level, format_request_text(r), fields);
}

} // namespace keyshim::relay
