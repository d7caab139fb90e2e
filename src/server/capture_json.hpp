#pragma once
// The /captures answers (docs/behaviour.md §12.1): the list of captured
// exchanges, filtered by pool, status and `after=ID`, and one exchange in
// full. Bodies that are not UTF-8 go out base64.
#include "relay/capture.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::server {

// GET /captures?pool=P&status=N&after=ID, each optional.
struct CaptureQuery {
  std::string pool;                   // "" for every pool
  std::optional<int> status;          // what the client got
  std::optional<std::uint64_t> after; // only entries with a greater id
};

// The query of `target`, or nullopt with `error` naming the bad parameter.
std::optional<CaptureQuery> parse_capture_query(std::string_view target, std::string& error);

// What the ring holds and its limits.
struct RingFacts {
  std::size_t size = 0;         // capture_size
  std::uint64_t body_limit = 0; // capture_body_limit
};

// {"size", "bytes", "body_limit", "entries": [summary...]}, oldest first.
std::string captures_json(const relay::CaptureRing& ring, const CaptureQuery& query, const RingFacts& facts);

// One entry in full: its summary plus "request" and "response".
std::string capture_json(const relay::Capture& capture);

// The 404 body for an id the ring does not hold: what it holds instead.
std::string capture_missing_json(const relay::CaptureRing& ring, std::string_view id);

} // namespace keyshim::server
