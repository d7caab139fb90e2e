#include "util/http_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

namespace keyshim::util {
namespace {

// Sorted by status, for a binary search. Every status Boost.Beast 1.74 names
// (its obsolete_reason), with its phrase, except 413: RFC 9110 renamed
// "Payload Too Large" to "Content Too Large", which is what keyshim's own
// 413 has always said.
constexpr auto k_reasons = std::to_array<std::pair<int, std::string_view>>({
    {100, "Continue"},
    {101, "Switching Protocols"},
    {102, "Processing"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {203, "Non-Authoritative Information"},
    {204, "No Content"},
    {205, "Reset Content"},
    {206, "Partial Content"},
    {207, "Multi-Status"},
    {208, "Already Reported"},
    {226, "IM Used"},
    {300, "Multiple Choices"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {305, "Use Proxy"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {407, "Proxy Authentication Required"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Entity"},
    {423, "Locked"},
    {424, "Failed Dependency"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {444, "Connection Closed Without Response"},
    {451, "Unavailable For Legal Reasons"},
    {499, "Client Closed Request"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
    {506, "Variant Also Negotiates"},
    {507, "Insufficient Storage"},
    {508, "Loop Detected"},
    {510, "Not Extended"},
    {511, "Network Authentication Required"},
    {599, "Network Connect Timeout Error"},
});

static_assert(std::is_sorted(k_reasons.begin(), k_reasons.end()), "k_reasons must stay sorted by status");

// The digits of `value` in `base`, appended without a temporary string.
template <typename Integer> void append_number(std::string& out, Integer value, int base) {
  std::array<char, 24> digits{}; // 2^64 - 1 has 20 decimal digits
  auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value, base);
  out.append(digits.data(), result.ptr);
}

} // namespace

std::string_view reason_phrase(int status) {
  auto it = std::lower_bound(k_reasons.begin(), k_reasons.end(), status,
                             [](const auto& entry, int wanted) { return entry.first < wanted; });
  if (it == k_reasons.end() || it->first != status) {
    return "<unknown-status>";
  }
  return it->second;
}

void append_request_line(std::string& out, std::string_view method, std::string_view target) {
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
}

void append_status_line(std::string& out, int status, std::string_view reason) {
  out.append("HTTP/1.1 ");
  append_number(out, status, 10);
  out.append(" ").append(reason.empty() ? reason_phrase(status) : reason).append("\r\n");
}

void append_content_length(std::string& out, std::uint64_t length) {
  out.append("Content-Length: ");
  append_number(out, length, 10);
  out.append("\r\n");
}

void append_chunk_size(std::string& out, std::size_t size) {
  append_number(out, size, 16);
  out.append("\r\n");
}

void append_chunk_end(std::string& out) {
  out.append("\r\n");
}

void append_last_chunk(std::string& out) {
  out.append("0\r\n\r\n");
}

std::string complete_response(int status, std::string_view reason, const FieldList& fields,
                              std::string_view body, bool head_request, bool close) {
  std::string out;
  out.reserve(256 + (head_request ? 0 : body.size()));
  append_status_line(out, status, reason);
  for (const auto& [name, value] : fields) {
    append_field(out, name, value);
  }
  append_content_length(out, body.size());
  if (close) {
    append_field(out, "Connection", "close");
  }
  end_head(out);
  if (!head_request) {
    out.append(body);
  }
  return out;
}

} // namespace keyshim::util
