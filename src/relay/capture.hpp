#pragma once
// Request capture: the newest exchanges, kept in memory for `keyshim log`
// and `keyshim show` (docs/behaviour.md §12.1). A Capture is one exchange as
// served at /captures: heads without credentials, bodies capped and with
// every pool key replaced by its fingerprint. The ring is the server's, on
// the event loop's thread (the exchanges fill it, /captures reads it there):
// no lock.
#include "util/clock.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::relay {

using Fields = std::vector<std::pair<std::string, std::string>>;

// One attempt of the chain.
struct CaptureStep {
  std::string key;     // the key's label
  int status = 0;      // the upstream's status; 0 for a transport failure
  std::string verdict; // ok, relay, retry, next, fail, cool, disable
  std::string reason;  // the verdict's reason ("429 Retry-After", "connect error"), "" for ok
  std::int64_t ms = 0; // from the attempt's start to its verdict (or commit)
};

// A captured body: the first bytes (at most the body limit, redacted) and
// how many there were in all.
struct CapturedBody {
  std::string data;
  std::uint64_t size = 0; // bytes in the whole body (the client's, for a response)
  bool truncated = false; // data holds only the start
};

struct Capture {
  std::uint64_t id = 0; // given by the ring
  util::TimePoint time;
  std::string pool;
  std::string model; // "" when the request named none
  std::string method;
  std::string target; // as the client sent it, query kept, keys and credential parameters masked
  int status = 0;     // what the client got; 0 when it left first
  std::int64_t duration_ms = 0;
  std::optional<std::int64_t> ttfb_ms;
  bool stream = false;
  std::optional<std::uint64_t> replay_of;
  std::vector<CaptureStep> chain;
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> output_tokens;
  std::string error; // why it ended abnormally, "" when it did not
  Fields request_head;
  CapturedBody request_body;
  Fields response_head;
  CapturedBody response_body;
  bool events = false; // the response is an event stream: its body holds the first events

  // The memory this entry holds, for the ring's account.
  std::size_t bytes() const;
};

// The memory one entry may hold beyond its two bodies: the heads are capped
// at k_capture_head_limit each, the target at the head gate's 8 KiB, and the
// chain at max_attempts (20) short steps.
constexpr std::size_t k_capture_head_limit = 16 * 1024;
constexpr std::size_t k_capture_entry_overhead = 2 * k_capture_head_limit + 16 * 1024;

// The last N exchanges, oldest first. Ids start at 1 and only grow.
class CaptureRing {
public:
  // Keep `capture` as the newest and give it the next id; then drop the
  // oldest entries until at most `size` remain (0 keeps none). Returns the id.
  std::uint64_t push(Capture capture, std::size_t size);

  const std::deque<Capture>& entries() const { return m_entries; }
  // The entry `id`, or nullptr when it was dropped or never existed.
  const Capture* find(std::uint64_t id) const;
  // The memory the entries hold now.
  std::uint64_t bytes() const { return m_bytes; }
  // The last id given, 0 before the first.
  std::uint64_t last_id() const { return m_next_id - 1; }

private:
  std::deque<Capture> m_entries;
  std::uint64_t m_bytes = 0;
  std::uint64_t m_next_id = 1;
};

} // namespace keyshim::relay
