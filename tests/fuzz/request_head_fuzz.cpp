// The request-head gate judges raw client bytes before Beast parses them, and
// the parsed head after. Besides never crashing, the two must agree on where
// the head ends: a head that Beast reads past the end the raw gate checked
// would let unchecked header lines through (request smuggling). Each input
// runs under the default limits and under small ones, so that short inputs
// reach the 414/431 caps too.
#include "fuzz_check.hpp"
#include "server/request_head.hpp"
#include "util/ascii.hpp"

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using namespace keyshim;
namespace http = relay::http;

// check_head's promises restated on the raw lines, independently of how it
// walks them: every header line up to the blank line ending the head is
// judged, so an accepted head has no folded line and not both framings.
void check_accepted_lines(std::string_view head) {
  bool content_length = false;
  bool transfer_encoding = false;
  bool first = true;
  while (!head.empty()) {
    std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (first) {
      first = false;
      continue;
    }
    if (line.empty()) {
      break;
    }
    KEYSHIM_FUZZ_CHECK(line.front() != ' ' && line.front() != '\t');
    std::string_view name = line.substr(0, line.find(':'));
    content_length = content_length || util::iequals(name, "content-length");
    transfer_encoding = transfer_encoding || util::iequals(name, "transfer-encoding");
  }
  KEYSHIM_FUZZ_CHECK(!(content_length && transfer_encoding));
}

void judge(std::string_view buffered, const server::HeadLimits& limits) {
  // As server::Connection::parse_head does it.
  while (buffered.substr(0, 2) == "\r\n") {
    buffered.remove_prefix(2);
  }
  std::size_t end = server::find_head_end(buffered);
  if (end == std::string_view::npos) {
    return;
  }
  KEYSHIM_FUZZ_CHECK(end <= buffered.size());
  server::HeadVerdict verdict = server::check_head(buffered.substr(0, end), limits);
  if (verdict.status != 0) {
    KEYSHIM_FUZZ_CHECK(verdict.status >= 400 && verdict.status < 600 && !verdict.message.empty());
    (void)server::error_response(verdict.status, verdict.message);
    return;
  }
  check_accepted_lines(buffered.substr(0, end));
  relay::RequestParser parser; // the server's own parser type
  parser.header_limit(static_cast<std::uint32_t>(limits.max_head_bytes + 1024));
  parser.body_limit(limits.max_body_bytes);
  relay::ErrorCode ec;
  std::size_t used = parser.put(boost::asio::buffer(buffered.data(), buffered.size()), ec);
  if (ec || !parser.is_header_done()) {
    return;
  }
  KEYSHIM_FUZZ_CHECK(used == end);
  verdict = server::check_parsed_head(parser.get());
  if (verdict.status != 0) {
    (void)server::error_response(verdict.status, verdict.message);
    return;
  }
  // Accepted: the framing Beast will use is one the raw gate allowed.
  if (parser.content_length()) {
    KEYSHIM_FUZZ_CHECK(!parser.chunked() && *parser.content_length() <= limits.max_body_bytes);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view buffered(reinterpret_cast<const char*>(data), size);
  judge(buffered, server::HeadLimits{});
  judge(buffered, server::HeadLimits{512, 128, 1000});
  return 0;
}
