#include "server/capture_json.hpp"

#include "server/status_json.hpp"
#include "util/ascii.hpp"
#include "util/byte_text.hpp"
#include "util/json.hpp"

#include <fmt/format.h>

#include <charconv>
#include <ctime>

namespace keyshim::server {
namespace {

using util::Json;

Json text(std::string value) {
  return Json::make_string(std::move(value));
}

template <class T> Json number_or_null(const std::optional<T>& value) {
  return value ? Json::make_number(*value) : Json();
}

// RFC 3339 in UTC with milliseconds: captures a second apart are common.
std::string time_text(util::TimePoint t) {
  std::string seconds = rfc3339_utc(t); // ...SSZ
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  seconds.insert(seconds.size() - 1, fmt::format(".{:03}", ms < 0 ? ms + 1000 : ms));
  return seconds;
}

template <class T> std::optional<T> whole_number(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

Json usage_json(const relay::Capture& c) {
  if (!c.input_tokens && !c.output_tokens) {
    return Json();
  }
  Json usage;
  usage.add("input_tokens", number_or_null(c.input_tokens))
      .add("output_tokens", number_or_null(c.output_tokens));
  return usage;
}

Json chain_json(const relay::Capture& c) {
  Json chain = Json::make_array();
  for (const relay::CaptureStep& step : c.chain) {
    Json entry;
    entry.add("key", text(step.key))
        .add("status", Json::make_number(step.status))
        .add("verdict", text(step.verdict))
        .add("reason", text(step.reason))
        .add("ms", Json::make_number(step.ms));
    chain.push_back(std::move(entry));
  }
  return chain;
}

Json summary_json(const relay::Capture& c) {
  Json entry;
  entry.add("id", Json::make_number(c.id))
      .add("time", text(time_text(c.time)))
      .add("pool", text(c.pool))
      .add("model", text(c.model))
      .add("method", text(c.method))
      .add("target", text(c.target))
      .add("status", Json::make_number(c.status))
      .add("duration_ms", Json::make_number(c.duration_ms))
      .add("ttfb_ms", number_or_null(c.ttfb_ms))
      .add("stream", Json::make_bool(c.stream))
      .add("replay_of", number_or_null(c.replay_of))
      .add("chain", chain_json(c))
      .add("usage", usage_json(c))
      .add("error", text(c.error));
  return entry;
}

Json head_json(const relay::Fields& fields) {
  Json head = Json::make_array();
  for (const auto& [name, value] : fields) {
    Json pair = Json::make_array();
    pair.push_back(text(name));
    pair.push_back(text(value));
    head.push_back(std::move(pair));
  }
  return head;
}

Json message_json(const relay::Fields& fields, const relay::CapturedBody& body) {
  bool utf8 = util::is_utf8(body.data);
  Json message;
  message.add("head", head_json(fields))
      .add("body", text(utf8 ? body.data : util::base64_encode(body.data)))
      .add("body_base64", Json::make_bool(!utf8))
      .add("body_truncated", Json::make_bool(body.truncated))
      .add("body_size", Json::make_number(body.size));
  return message;
}

bool matches(const relay::Capture& c, const CaptureQuery& query) {
  return (query.pool.empty() || c.pool == query.pool) && (!query.status || c.status == *query.status) &&
         (!query.after || c.id > *query.after);
}

} // namespace

std::optional<CaptureQuery> parse_capture_query(std::string_view target, std::string& error) {
  CaptureQuery query;
  std::size_t question = target.find('?');
  std::string_view rest =
      question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);
  while (!rest.empty()) {
    std::size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    std::size_t eq = pair.find('=');
    std::string name = util::percent_decode(pair.substr(0, eq));
    std::string value =
        eq == std::string_view::npos ? std::string() : util::percent_decode(pair.substr(eq + 1));
    if (name == "pool") {
      query.pool = value;
    } else if (name == "status") {
      if (!(query.status = whole_number<int>(value))) {
        error = "status must be a whole number, like status=429";
        return std::nullopt;
      }
    } else if (name == "after") {
      if (!(query.after = whole_number<std::uint64_t>(value))) {
        error = "after must be a capture id, like after=12";
        return std::nullopt;
      }
    } else if (!name.empty()) {
      error = fmt::format("unknown parameter \"{}\": /captures takes pool, status and after", name);
      return std::nullopt;
    }
  }
  return query;
}

std::string captures_json(const relay::CaptureRing& ring, const CaptureQuery& query, const RingFacts& facts) {
  Json entries = Json::make_array();
  for (const relay::Capture& c : ring.entries()) {
    if (matches(c, query)) {
      entries.push_back(summary_json(c));
    }
  }
  Json out;
  out.add("size", Json::make_number(facts.size))
      .add("bytes", Json::make_number(ring.bytes()))
      .add("body_limit", Json::make_number(facts.body_limit))
      .add("last_id", Json::make_number(ring.last_id()))
      .add("entries", std::move(entries));
  return out.dump();
}

std::string capture_json(const relay::Capture& capture) {
  Json out = summary_json(capture);
  Json response = message_json(capture.response_head, capture.response_body);
  response.add("events", Json::make_bool(capture.events));
  out.add("request", message_json(capture.request_head, capture.request_body))
      .add("response", std::move(response));
  return out.dump();
}

std::string capture_missing_json(const relay::CaptureRing& ring, std::string_view id) {
  std::string holds = ring.entries().empty() ? std::string("the ring is empty")
                                             : fmt::format("the ring holds {}..{}", ring.entries().front().id,
                                                           ring.entries().back().id);
  Json out;
  out.add("error", text(fmt::format("no capture {}: {}", id, holds)));
  return out.dump();
}

} // namespace keyshim::server
