#pragma once
// The one log line per request:
// `TS POST /v1/chat/completions 200 key=personal [replay=12] attempts=2
//  chain=team:429,personal:200 ttfb=412ms dur=8.1s bytes=10432 in=1200 out=310 stream`.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::relay {

struct RequestRecord {
  std::string method;
  std::string path;      // without the query: a query may carry a key
  std::string pool;      // the pool that served it ("default" for the top-level keys)
  std::string model;     // the model it asked for, "" when it named none
  int status = 0;        // what the client got; 0 when it left first
  std::string key_label; // the key that served it, "" if none
  int attempts = 0;
  std::vector<std::string> chain; // "label:status" or "label:connect error" per attempt
  std::optional<std::chrono::milliseconds> ttfb;
  std::chrono::milliseconds duration{0};
  std::uint64_t bytes = 0;                   // body bytes written to the client
  bool stream = false;                       // sent chunked as it arrived
  std::optional<std::uint64_t> input_tokens; // the usage the response reported, if it did
  std::optional<std::uint64_t> output_tokens;
  std::string websocket;    // a relayed WebSocket: its messages and how it ended; "" otherwise
  std::string error;        // why it ended abnormally, "" when it did not
  bool client_left = false; // the client hung up: its own doing, not a warning
  // The capture this request replays (keyshim-replay), if any.
  std::optional<std::uint64_t> replay_of;
};

// Write `record` through util::Logger in the configured format.
void log_request(const RequestRecord& record);

// The text form (without timestamp), exposed for tests.
std::string format_request_text(const RequestRecord& record);

} // namespace keyshim::relay
