#pragma once
// `keyshim replay`'s pure parts: a captured exchange read from GET
// /captures/ID, the request that re-sends it, and the comparison printed
// after the replay's answer. No I/O here, so tests feed them JSON.
#include "policy/types.hpp"
#include "server/local_client.hpp"
#include "util/json.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::cli {

using std::chrono::milliseconds;

// One exchange as /captures/ID describes it (the fields replay uses).
struct CapturedExchange {
  std::uint64_t id = 0;
  std::string pool;
  std::string model;
  std::string method;
  std::string target;
  int status = 0; // what the client got; 0 when it left first
  std::optional<milliseconds> ttfb;
  std::optional<milliseconds> duration;
  std::string chain;      // "k0:429,k1:200"
  std::string served_key; // the chain's last key, "" when none
  policy::Usage usage;
  server::HeaderList request_head;
  std::string request_body;  // decoded
  std::string response_body; // decoded; the first events of a stream
  bool response_events = false;
};

// The exchange in a /captures/ID answer, or nullopt with `error` saying why
// it cannot be replayed (a truncated or undecodable request body, a field
// missing). `id` is the one asked for, for the messages.
std::optional<CapturedExchange> read_capture(const util::Json& capture, std::uint64_t id, std::string& error);

// Standard base64 (padding optional, no whitespace); nullopt when malformed.
std::optional<std::string> decode_base64(std::string_view text);

// The request that replays `captured` through its instance: its method, its
// target (with the pool's route when the capture names a pool but not its
// prefix), its head minus hop-by-hop fields, Host, framing, credentials,
// Accept-Encoding and earlier replay fields, then `keyshim-replay: ID`,
// `keyshim-key: LABEL` when `key` is set and the client_token when set.
server::LocalRequest replay_request(const CapturedExchange& captured, const std::string& key,
                                    const std::string& client_token);

// What came back from the replay.
struct ReplayAnswer {
  int status = 0;
  std::optional<milliseconds> ttfb; // from sending to the response head
  milliseconds duration{0};
  std::string content_type;
  std::string body_start; // the first bytes of the body (capped)
  policy::Usage usage;
  std::string served_key; // from the instance's capture of the replay, "" when unknown
  std::string error;      // a transport failure, "" when none
};

// The side-by-side comparison: status, key, time to first byte, total
// time, usage, then the first events (or the start of the body) of each.
// `key` is what --key named ("" when keyshim chose).
std::string render_comparison(const CapturedExchange& captured, const ReplayAnswer& replay,
                              const std::string& key);

// The key that served the newest replay of `id` in a /captures answer, ""
// when none of its entries is one (capture off, or only errors captured).
std::string replay_key_in(const util::Json& captures, std::uint64_t id);

} // namespace keyshim::cli
