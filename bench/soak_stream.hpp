// One soak stream through keyshim: send the request, read the answer with a
// strict HTTP/1.1 framing reader, and judge it against what the upstream
// sent for the request's seed.
#pragma once

#include "soak_common.hpp"
#include "soak_keys.hpp"

#include <cstdint>
#include <string>

namespace soak {

enum class Hangup { none, waiting, streaming, uploading };

struct StreamPlan {
  Kind kind = Kind::sse;
  std::uint64_t id = 0;
  std::uint64_t seed = 0;
  Hangup hangup = Hangup::none;
  std::uint64_t hangup_after = 0; // body bytes (streaming) or milliseconds (waiting, uploading)
};

enum class Outcome {
  completed,       // 200, complete framing, byte-identical to the upstream's
  broken_expected, // 200 then an abnormal end, for a stream the upstream cut
  error_status,    // an error status before commit (keyshim's or relayed)
  hung_up,         // the client left on purpose
  violation        // anything else: a short or wrong answer, a hang, no answer
};

struct StreamResult {
  Outcome outcome = Outcome::violation;
  int status = 0;
  std::uint64_t bytes = 0;
  std::string detail;         // why, for a violation
  std::uint64_t messages = 0; // WebSocket messages echoed byte-identical
  bool waited = false;        // a healthy stream's head came late: it waited for a key
  bool wait_503 = false;      // keyshim's own 503 (no key within max_wait)
};

// Runs one stream against keyshim on 127.0.0.1:`port`. No step waits longer
// than `timeout_s` for progress.
// Answers served (X-Soak-Key) by a key `keys` retired before are violations.
StreamResult run_stream(int port, const StreamPlan& plan, int timeout_s, KeyBook& keys);

// A WebSocket session of `plan` (Kind::ws) through keyshim: see soak_ws.cpp.
StreamResult run_ws(int port, const StreamPlan& plan, int timeout_s, KeyBook& keys);

} // namespace soak
