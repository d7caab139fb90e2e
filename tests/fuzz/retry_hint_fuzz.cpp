// How long to wait comes from the upstream's headers and error body: a
// hostile or broken provider must not crash keyshim, make a wait negative or
// overflow one into a short cooldown. The input is an HTTP response head
// without its status line ("Name: value" lines, a blank line) and the body:
// the seeds are real 429/503 answers.
#include "fuzz_check.hpp"
#include "policy/failure_policy.hpp"
#include "policy/retry_hints.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace {

using namespace keyshim;
using namespace std::chrono;

// Splits "Name: value\n...\n\nbody" as the relay would have it.
std::vector<policy::Header> split_head(std::string_view& text) {
  std::vector<policy::Header> headers;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      break;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    headers.push_back({std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))});
  }
  return headers;
}

// A fixed "now" keeps every run reproducible: 2026-03-01 12:00:00 UTC.
const util::TimePoint k_now{sys_days(year{2026} / 3 / 1) + hours(12)};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<policy::Header> headers = split_head(text);
  std::string_view body = text;

  for (const policy::Header& header : headers) {
    (void)policy::parse_http_date(header.value, k_now);
    (void)policy::parse_rfc3339(header.value);
  }
  (void)policy::parse_http_date(body, k_now); // a date-only seed exercises the parser alone
  (void)policy::parse_rfc3339(body);
  if (std::optional<policy::RetryHint> hint = policy::find_retry_hint(headers, body, k_now)) {
    KEYSHIM_FUZZ_CHECK(hint->wait >= milliseconds(0));
    KEYSHIM_FUZZ_CHECK(!hint->source.empty());
  }

  // The verdicts these answers lead to, from a fresh key to one that has
  // failed for a very long time (the pool's counters are ints: a billion
  // failures in a row is beyond any real run): a cooldown is never negative
  // and never over the cap.
  // One status per kind of row in the failure table keeps the target fast.
  policy::Limits limits;
  policy::Outcome outcome{policy::TransportFailure::none, 0, std::move(headers), std::string(body), false};
  for (int status : {200, 400, 403, 429, 503}) {
    outcome.status = status;
    for (policy::KeyHistory history :
         {policy::KeyHistory{0, 0}, policy::KeyHistory{3, 2}, policy::KeyHistory{1 << 30, 1 << 30}}) {
      policy::Verdict verdict = policy::classify(outcome, history, k_now, limits);
      KEYSHIM_FUZZ_CHECK(verdict.cooldown >= milliseconds(0) && verdict.cooldown <= limits.max_cooldown);
    }
  }
  return 0;
}
