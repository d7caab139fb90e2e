#include "server/request_head.hpp"

#include "util/ascii.hpp"
#include "util/http_text.hpp"
#include "util/json_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

namespace keyshim::server {
namespace {

using util::iequals;
using util::trim;

// What path[i] stands for where a server may decode it: `.`, `/` or `\` for
// `%2e`, `%2f` and `%5c` in any case (3 bytes), else path[i] itself (1 byte).
struct PathUnit {
  char c;
  std::size_t length;
};

PathUnit unit_at(std::string_view path, std::size_t i) {
  if (path[i] == '%' && i + 2 < path.size()) {
    char high = path[i + 1];
    char low = static_cast<char>(path[i + 2] | 0x20); // 'E' -> 'e': only a letter's two cases map to it
    if (high == '2' && (low == 'e' || low == 'f')) {
      return {low == 'e' ? '.' : '/', 3};
    }
    if (high == '5' && low == 'c') {
      return {'\\', 3};
    }
  }
  return {path[i], 1};
}

} // namespace

// One pass over the path, no copy: it runs for every request.
bool has_dot_segment(std::string_view target) {
  std::size_t dots = 0;    // dots in the current segment, before any `;`
  bool other = false;      // the segment has something else before any `;`
  bool parameters = false; // past the segment's first `;`
  for (std::size_t i = 0;;) {
    // The end of the path (the target's end, `?` or `#`) ends its last
    // segment like a separator.
    bool end = i == target.size() || target[i] == '?' || target[i] == '#';
    PathUnit unit = end ? PathUnit{'/', 1} : unit_at(target, i);
    i += unit.length;
    if (unit.c == '/' || unit.c == '\\') {
      if (!other && (dots == 1 || dots == 2)) {
        return true;
      }
      if (end) {
        return false;
      }
      dots = 0;
      other = false;
      parameters = false;
    } else if (unit.c == ';') {
      parameters = true;
    } else if (!parameters) {
      dots += unit.c == '.' ? 1 : 0;
      other = other || unit.c != '.';
    }
  }
}

std::size_t find_head_end(std::string_view buffered) {
  std::size_t crlf = buffered.find("\r\n\r\n");
  std::size_t lf = buffered.find("\n\n");
  std::size_t end = std::string_view::npos;
  if (crlf != std::string_view::npos) {
    end = crlf + 4;
  }
  if (lf != std::string_view::npos && (end == std::string_view::npos || lf + 2 < end)) {
    end = lf + 2;
  }
  return end;
}

HeadVerdict check_head(std::string_view head, const HeadLimits& limits) {
  if (head.size() > limits.max_head_bytes) {
    return {431, fmt::format("request headers exceed {} bytes", limits.max_head_bytes)};
  }
  std::optional<std::uint64_t> content_length;
  bool chunked = false;
  bool first = true;
  while (!head.empty()) {
    std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (line.size() > limits.max_line_bytes) {
      return first ? HeadVerdict{414, "request line too long"}
                   : HeadVerdict{431, fmt::format("a header line exceeds {} bytes", limits.max_line_bytes)};
    }
    if (first) {
      first = false;
      continue;
    }
    // Only an empty line ends the head (as for find_head_end and Beast); a
    // line of blanks is a folded line, and the lines after it must be judged.
    if (line.empty() || line == "\r") {
      break;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      return {400, "obsolete header line folding is not accepted"};
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return {400, "malformed header line"};
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
        return {400, "invalid Content-Length"};
      }
      if (content_length && *content_length != n) {
        return {400, "conflicting Content-Length headers"};
      }
      content_length = n;
    } else if (iequals(name, "transfer-encoding")) {
      if (!iequals(value, "chunked") || chunked) {
        return {400, "only a single \"Transfer-Encoding: chunked\" is accepted"};
      }
      chunked = true;
    }
  }
  if (chunked && content_length) {
    return {400, "both Content-Length and Transfer-Encoding given (ambiguous framing)"};
  }
  if (content_length && *content_length > limits.max_body_bytes) {
    return {413, fmt::format("request body of {} bytes exceeds max_request_body ({} bytes)", *content_length,
                             limits.max_body_bytes)};
  }
  return {};
}

HeadVerdict check_parsed_head(const relay::RequestHead& head) {
  namespace http = relay::http;
  if (head.method() == http::verb::connect || head.method() == http::verb::trace) {
    return {405, fmt::format("{} is not relayed", head.method_string())};
  }
  std::string_view target = head.target();
  if (target.empty() || target.front() != '/') {
    return {400, "the request target must be a path (origin-form), not a URL or an authority"};
  }
  // A server resolves /alpha/../beta to /beta: forwarded under pool alpha's
  // base path with alpha's key, it would reach another API (docs/behaviour.md §9).
  if (has_dot_segment(target)) {
    return {400, "the request path has a \".\" or \"..\" segment (literal or percent-encoded); send the "
                 "path without it"};
  }
  if (head.version() == 11 && relay::field_count(head, http::field::host) != 1) {
    return {400, "an HTTP/1.1 request needs exactly one Host header"};
  }
  std::size_t te = relay::field_count(head, http::field::transfer_encoding);
  if (head.version() != 11 && te != 0) {
    return {400, "Transfer-Encoding is not allowed in HTTP/1.0"};
  }
  // Beast reads "chunked, gzip" as a request without a body and would parse
  // the body as the next request: only a single "chunked" is accepted.
  if (te > 1 || (te == 1 && !iequals(relay::field_value(head, http::field::transfer_encoding), "chunked"))) {
    return {400, "only a single \"Transfer-Encoding: chunked\" is accepted"};
  }
  return {};
}

std::string error_response(int status, std::string_view message) {
  std::string body = util::json_error_body(fmt::format("keyshim: {}", message), "keyshim_bad_request",
                                           fmt::format("http_{}", status));
  util::FieldList fields = {{"Content-Type", "application/json"}};
  if (status == 405) {
    fields.emplace_back("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
  }
  return util::complete_response(status, {}, fields, body, false, true);
}

} // namespace keyshim::server
