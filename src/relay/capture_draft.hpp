#pragma once
// What an exchange gathers for the capture ring while it runs (only when its
// pool's `capture` is not off): the original target, each attempt's step,
// the response head and the first bytes of the response. At its end,
// build() makes the Capture: heads without credentials, bodies capped, and
// every pool key and the client_token replaced by their fingerprints.
// Event-loop thread, like the exchange.
#include "config/config.hpp"
#include "relay/capture.hpp"
#include "relay/request_log.hpp"
#include "util/clock.hpp"
#include "util/secret.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {

class Redactor;

// Replaces what must not be captured in any text: every pool key (raw and
// percent-encoded) and the client_token, by their fingerprints.
class CaptureMask {
public:
  CaptureMask(const Redactor& keys, const util::Secret* client_token);
  std::string apply(std::string_view text) const;
  // How far past a cut a text must be read for the cut part to redact whole.
  std::size_t margin() const { return m_margin; }

private:
  const Redactor& m_keys;
  std::vector<std::pair<std::string, std::string>> m_token; // its forms and its fingerprint
  std::size_t m_margin = 0;
};

// A head for the capture: credential fields (authorization, x-api-key,
// x-goog-api-key, api-key, proxy-authorization, cookie, set-cookie) left
// out, every value masked; fields past k_capture_head_limit bytes are left
// out and counted in a last `keyshim-capture` field.
Fields captured_head(const Fields& fields, const CaptureMask& mask);

// The target with its query kept: every pool key masked, and the value of
// each credential parameter (`key` and the pool's query:NAME) replaced by `~`.
std::string captured_target(std::string_view target, const std::vector<std::string>& query_auth_params,
                            const CaptureMask& mask);

// The start of `bytes` (the first bytes of a body of `total` bytes), masked
// and cut to at most `limit` bytes at a UTF-8 boundary.
CapturedBody captured_body(std::string_view bytes, std::uint64_t total, std::size_t limit,
                           const CaptureMask& mask);

// Whether a pool in `mode` keeps the exchange `record` describes: errors
// keeps those whose client got 400 or more or nothing (status 0), those that
// ended abnormally other than by the client hanging up mid-answer, and those
// where an attempt failed before the answer.
bool capture_wanted(config::CaptureMode mode, const RequestRecord& record, bool attempt_failed);

class CaptureDraft {
public:
  using Mono = std::chrono::steady_clock::time_point;
  // `read_limit`: the response bytes kept to build from (the body limit plus
  // the mask's margin).
  CaptureDraft(config::CaptureMode mode, std::string target, util::TimePoint time, std::size_t read_limit);

  void attempt_started(Mono now) { m_attempt_started = now; }
  // An attempt's verdict: `verdict` ok for the attempt that answered.
  void step(std::string key, int status, std::string verdict, std::string reason, Mono now);
  // The head the client's answer is built from, and whether it is an event stream.
  void response_head(Fields head, bool events);
  // Bytes on their way to the client: the first read_limit are kept.
  void tee(std::string_view piece);
  // A whole answer (keyshim's own, or an upstream error relayed whole).
  void answer(Fields head, std::string_view body);

  // Keep the exchange? (capture_wanted with this draft's steps)
  bool wanted(const RequestRecord& record) const;

  // The request as the capture needs it.
  struct Request {
    Fields head;
    std::string_view body;
    const std::vector<std::string>* query_auth_params = nullptr;
  };
  Capture build(const RequestRecord& record, const Request& request, const CaptureMask& mask,
                std::size_t body_limit) const;

private:
  config::CaptureMode m_mode;
  std::string m_target;
  util::TimePoint m_time;
  std::size_t m_read_limit;
  Mono m_attempt_started{};
  std::vector<CaptureStep> m_chain;
  bool m_failed = false; // an attempt before the answer failed
  Fields m_response_head;
  bool m_events = false;
  std::string m_response; // the first read_limit bytes the client got
};

} // namespace keyshim::relay
