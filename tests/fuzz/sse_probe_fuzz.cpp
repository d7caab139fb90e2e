// The first-event probe reads the start of a 200 event stream from the
// upstream, through a decoder when it is compressed. Neither may crash, hang
// or hold more than the probe's cap, whatever the bytes. The first input byte
// names the Content-Encoding ('g' gzip, 'd' deflate, 'b' br, 'z' zstd,
// anything else identity); the rest is the body, fed in pieces of varying
// size as they arrive from a socket.
#include "fuzz_check.hpp"
#include "policy/failure_policy.hpp"
#include "policy/sse_probe.hpp"
#include "policy/stream_decoder.hpp"

#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace {

using namespace keyshim;

// As in relay/exchange_body.cpp: how much of a stream the probe looks at.
constexpr std::size_t k_probe_limit = 64 * 1024;

std::string_view encoding_named_by(char tag) {
  switch (tag) {
  case 'g':
    return "gzip";
  case 'd':
    return "deflate";
  case 'b':
    return "br";
  case 'z':
    return "zstd";
  default:
    return "identity";
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view encoding = encoding_named_by(static_cast<char>(data[0]));
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::unique_ptr<policy::StreamDecoder> decoder = policy::make_decoder(encoding);
  KEYSHIM_FUZZ_CHECK(decoder != nullptr);

  // The relay's probe loop: feed a piece, look for the end of the first event.
  static constexpr std::array<std::size_t, 6> k_piece_sizes = {1, 7, 64, 3, 1500, 16384};
  std::string decoded;
  std::optional<std::size_t> end;
  std::size_t offset = 0;
  for (std::size_t i = 0; offset < body.size() && !end; ++i) {
    std::string_view piece = body.substr(offset, k_piece_sizes[i % k_piece_sizes.size()]);
    offset += piece.size();
    bool readable = decoder->feed(piece, decoded, k_probe_limit);
    KEYSHIM_FUZZ_CHECK(decoded.size() <= k_probe_limit);
    if (!readable) {
      break;
    }
    end = policy::first_event_end(decoded);
  }
  if (encoding == "identity") {
    KEYSHIM_FUZZ_CHECK(body.substr(0, decoded.size()) == decoded);
  }
  if (!end) {
    return 0;
  }
  KEYSHIM_FUZZ_CHECK(*end <= decoded.size());
  std::string first_event = decoded.substr(0, *end);
  std::optional<std::string> error = policy::first_event_error(first_event);
  // What names the error goes to logs and /status: a short identifier only.
  if (error) {
    KEYSHIM_FUZZ_CHECK(!error->empty() && error->size() <= 64);
    for (char c : *error) {
      KEYSHIM_FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
    }
  }

  policy::Outcome outcome{policy::TransportFailure::none, 200, {}, first_event, true};
  policy::Verdict verdict = policy::classify(outcome, {}, {}, policy::Limits{});
  KEYSHIM_FUZZ_CHECK(verdict.cooldown >= policy::milliseconds(0));
  return 0;
}
