#include "cli/replay_capture.hpp"

#include "cli/status_table.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace keyshim::cli {
namespace {

// What the replay does not copy from the captured head: hop-by-hop fields
// and framing (recomputed), Host (the instance's), credentials (the
// client_token goes instead), Accept-Encoding (so the answer prints as
// text) and the replay fields of a capture that was itself a replay.
constexpr std::array<std::string_view, 18> k_dropped = {"connection",
                                                        "keep-alive",
                                                        "proxy-connection",
                                                        "te",
                                                        "trailer",
                                                        "transfer-encoding",
                                                        "upgrade",
                                                        "proxy-authorization",
                                                        "proxy-authenticate",
                                                        "content-length",
                                                        "host",
                                                        "expect",
                                                        "authorization",
                                                        "x-api-key",
                                                        "x-goog-api-key",
                                                        "api-key",
                                                        "accept-encoding",
                                                        "keyshim-replay"};

bool dropped(std::string_view name) {
  return util::iequals(name, "keyshim-key") ||
         std::any_of(k_dropped.begin(), k_dropped.end(),
                     [&](std::string_view entry) { return util::iequals(entry, name); });
}

std::optional<milliseconds> millis(const util::Json& object, std::string_view name) {
  const util::Json* value = object.find(name);
  if (value == nullptr || !value->is_number()) {
    return std::nullopt;
  }
  return milliseconds(static_cast<long long>(value->as_number()));
}

std::optional<std::uint64_t> count(const util::Json* object, std::string_view name) {
  const util::Json* value = object != nullptr ? object->find(name) : nullptr;
  return value != nullptr ? value->as_unsigned() : std::nullopt;
}

server::HeaderList head_of(const util::Json* head) {
  server::HeaderList out;
  for (const util::Json& field : head != nullptr ? head->items() : util::Json::Array{}) {
    if (field.items().size() == 2 && field.items()[0].is_string() && field.items()[1].is_string()) {
      out.emplace_back(field.items()[0].as_string(), field.items()[1].as_string());
    }
  }
  return out;
}

// A captured body ("body", "body_base64"), decoded; nullopt when its base64 is bad.
std::optional<std::string> body_of(const util::Json& part) {
  std::string body = part.string_at("body").value_or("");
  const util::Json* base64 = part.find("body_base64");
  if (base64 != nullptr && base64->as_bool()) {
    return decode_base64(body);
  }
  return body;
}

// "k0:429,k1:200" and the last key, from the capture's chain.
void read_chain(const util::Json* chain, CapturedExchange& out) {
  for (const util::Json& attempt : chain != nullptr ? chain->items() : util::Json::Array{}) {
    std::string key = attempt.string_at("key").value_or("?");
    std::optional<std::uint64_t> status = count(&attempt, "status");
    out.chain += fmt::format("{}{}:{}", out.chain.empty() ? "" : ",", key,
                             status && *status != 0 ? std::to_string(*status) : "-");
    out.served_key = key;
  }
}

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

} // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  while (!text.empty() && text.back() == '=') {
    text.remove_suffix(1);
  }
  if (text.size() % 4 == 1) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    int value = sextet(c);
    if (value < 0) {
      return std::nullopt;
    }
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

std::optional<CapturedExchange> read_capture(const util::Json& capture, std::uint64_t id,
                                             std::string& error) {
  const util::Json* request = capture.find("request");
  std::optional<std::string> method = capture.string_at("method");
  std::optional<std::string> target = capture.string_at("target");
  if (request == nullptr || !request->is_object() || !method || !target || target->empty()) {
    error = fmt::format("capture {} has no request to replay (no method, target or request)", id);
    return std::nullopt;
  }
  const util::Json* truncated = request->find("body_truncated");
  if (truncated != nullptr && truncated->as_bool()) {
    error = fmt::format("capture {} kept only the first {} of its {}-byte request body (the capture "
                        "body limit): replaying it would send a different request",
                        id, request->string_at("body").value_or("").size(),
                        count(request, "body_size").value_or(0));
    return std::nullopt;
  }
  std::optional<std::string> body = body_of(*request);
  if (!body) {
    error = fmt::format("capture {}'s request body is marked base64 but does not decode", id);
    return std::nullopt;
  }
  CapturedExchange out;
  out.id = id;
  out.pool = capture.string_at("pool").value_or("");
  out.model = capture.string_at("model").value_or("");
  out.method = *method;
  out.target = *target;
  out.status = static_cast<int>(count(&capture, "status").value_or(0));
  out.ttfb = millis(capture, "ttfb_ms");
  out.duration = millis(capture, "duration_ms");
  read_chain(capture.find("chain"), out);
  out.usage = {count(capture.find("usage"), "input_tokens"), count(capture.find("usage"), "output_tokens")};
  out.request_head = head_of(request->find("head"));
  out.request_body = std::move(*body);
  if (const util::Json* response = capture.find("response"); response != nullptr && response->is_object()) {
    out.response_body = body_of(*response).value_or("");
    out.response_events = response->find("events") != nullptr && response->find("events")->as_bool();
  }
  return out;
}

server::LocalRequest replay_request(const CapturedExchange& captured, const std::string& key,
                                    const std::string& client_token) {
  server::LocalRequest out;
  out.method = captured.method;
  out.target = captured.target;
  // The capture's target is the client's, with the pool's route; a named
  // pool's capture without it is given it, so the same pool serves.
  if (!captured.pool.empty() && captured.pool != "default") {
    const std::string route = "/" + captured.pool;
    if (out.target != route && out.target.rfind(route + "/", 0) != 0) {
      out.target = route + out.target;
    }
  }
  for (const auto& [name, value] : captured.request_head) {
    if (!dropped(name)) {
      out.headers.emplace_back(name, value);
    }
  }
  out.headers.emplace_back("keyshim-replay", std::to_string(captured.id));
  if (!key.empty()) {
    out.headers.emplace_back("keyshim-key", key);
  }
  if (!client_token.empty()) {
    out.headers.emplace_back("Authorization", "Bearer " + client_token);
  }
  out.body = captured.request_body;
  return out;
}

std::string replay_key_in(const util::Json& captures, std::uint64_t id) {
  std::string key;
  const util::Json* entries = captures.find("entries");
  for (const util::Json& entry : entries != nullptr ? entries->items() : util::Json::Array{}) {
    const util::Json* replay_of = entry.find("replay_of");
    if (replay_of != nullptr && replay_of->as_unsigned() == id) {
      CapturedExchange chain;
      read_chain(entry.find("chain"), chain);
      key = chain.served_key; // entries are oldest first: the last is the newest
    }
  }
  return key;
}

} // namespace keyshim::cli
