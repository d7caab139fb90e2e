#include "cli/top_detail.hpp"

#include "cli/top_text.hpp"

#include <fmt/format.h>

namespace keyshim::cli::top {
namespace {

constexpr std::size_t k_name_width = 13;

Line field(const std::string& name, std::string value, Style style = Style::plain) {
  return {{"  " + fit(name, k_name_width), Style::dim}, {std::move(value), style}};
}

std::string usage_text(const Usage& usage) {
  std::string text = fmt::format("{} requests, {} tokens in, {} out", usage.requests,
                                 compact(usage.input_tokens), compact(usage.output_tokens));
  for (std::size_t i = 0; i < usage.failures.size(); ++i) {
    text += fmt::format("{}{} {}", i == 0 ? "; failed: " : ", ", usage.failures[i].first,
                        usage.failures[i].second);
  }
  return text;
}

std::string state_text(const std::string& state, const std::string& reason, Millis resumes_in) {
  std::string text = state;
  if (state == "cooling") {
    text += ", resumes in " + countdown(resumes_in);
  }
  return reason.empty() ? text : text + ": " + reason;
}

void add_models(std::vector<Line>& lines, const KeyRow& key, Millis age) {
  for (std::size_t i = 0; i < key.models.size(); ++i) {
    const ModelRow& model = key.models[i];
    lines.push_back(field(i == 0 ? "models" : "",
                          model.model + " " + state_text(model.state, model.reason, model.resumes_in - age),
                          state_style(model.state)));
  }
}

void add_gauges(std::vector<Line>& lines, const KeyRow& key, Millis age) {
  for (const Gauge& gauge : key.gauges) {
    std::string resets =
        gauge.resets_in >= Millis(0) ? ", resets in " + countdown(gauge.resets_in - age) : "";
    lines.push_back({{"  " + fit(gauge.kind, k_name_width), Style::dim},
                     {gauge.name + " ", Style::plain},
                     {bar(gauge.used, gauge.limit, 22), Style::bar},
                     {" " + gauge_amount(gauge) + resets, Style::plain}});
  }
}

std::vector<Line> recent_lines(const KeyRow& key, const Recent* recent) {
  if (recent == nullptr || recent->key_id != key.id) {
    return {{{"  asking keyshim for its captures...", Style::dim}}};
  }
  std::vector<Line> lines;
  for (const std::string& line : recent->lines) {
    lines.push_back({{"  " + line, Style::plain}});
  }
  if (lines.empty()) {
    lines.push_back({{"  " + recent->note, Style::dim}});
  }
  return lines;
}

} // namespace

std::vector<Line> detail_lines(const KeyRow& key, Millis age, const Recent* recent) {
  std::vector<Line> lines;
  lines.push_back({{"key " + key.label, Style::title}, {" in pool " + key.pool, Style::plain}});
  lines.push_back(field("fingerprint", key.fingerprint));
  lines.push_back(field("upstream", key.upstream));
  lines.push_back(
      field("state", state_text(key.state, key.reason, key.resumes_in - age), state_style(key.state)));
  lines.push_back(field("in flight", key.max_concurrent > 0
                                         ? fmt::format("{} of {}", key.in_flight, key.max_concurrent)
                                         : fmt::format("{}, no max_concurrent", key.in_flight)));
  if (key.websockets) {
    lines.push_back(field("websockets", std::to_string(*key.websockets)));
  }
  if (key.sessions) {
    lines.push_back(field("sessions", std::to_string(*key.sessions)));
  }
  lines.push_back(field("answers", fmt::format("{} ok, {} failed, last status {}", key.ok, key.err,
                                               key.last_status ? std::to_string(key.last_status) : "-")));
  lines.push_back(field("last error",
                        key.last_error ? last_error_text(key, age, std::string::npos) : "none since start",
                        key.last_error ? Style::bad : Style::plain));
  lines.push_back(field("req/min", rate_text(key.per_minute)));
  lines.push_back(field("today", usage_text(key.today)));
  lines.push_back(field("since start", usage_text(key.total)));
  add_models(lines, key, age);
  add_gauges(lines, key, age);
  lines.emplace_back();
  lines.push_back({{"recent requests", Style::heading}});
  std::vector<Line> recent_requests = recent_lines(key, recent);
  lines.insert(lines.end(), recent_requests.begin(), recent_requests.end());
  return lines;
}

} // namespace keyshim::cli::top
