#pragma once
// The one way keyshim writes HTTP/1.1 message text: request and status lines,
// header fields, Content-Length, the blank line that ends a head, and chunked
// framing. Each function appends to a std::string the caller owns (and has
// usually reserved), so a head is built in place, without streams or
// temporaries. Bytes go out as given: what may cross (which fields, which
// values) is the caller's decision, made where it knows HTTP's meaning.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshim::util {

// The reason phrase keyshim writes for `status` when it has none of its own
// ("Too Many Requests"). The names are Boost.Beast's (RFC 7231's, with
// RFC 9110's "Content Too Large" for 413), and "<unknown-status>", Beast's
// placeholder, for a status without one: relayed status lines keep the bytes
// they had when Beast supplied the phrase.
std::string_view reason_phrase(int status);

// "METHOD target HTTP/1.1\r\n".
void append_request_line(std::string& out, std::string_view method, std::string_view target);

// "HTTP/1.1 status reason\r\n", with reason_phrase(status) when `reason` is empty.
void append_status_line(std::string& out, int status, std::string_view reason = {});

// "name: value\r\n".
inline void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

// "name: " + whatever `write_value(out)` appends + "\r\n": for a value written
// in place (redacted, or a secret that should not be copied first).
template <typename WriteValue>
requires std::invocable<WriteValue&, std::string&>
void append_field(std::string& out, std::string_view name, WriteValue&& write_value) {
  out.append(name).append(": ");
  write_value(out);
  out.append("\r\n");
}

// "Content-Length: n\r\n".
void append_content_length(std::string& out, std::uint64_t length);

// The blank line that ends a head.
inline void end_head(std::string& out) {
  out.append("\r\n");
}

// A whole response keyshim answers itself, the one way it writes one: the
// status line, `fields`, its Content-Length, `Connection: close` when
// `close`, then the body (left out for a HEAD request, its length kept).
using FieldList = std::vector<std::pair<std::string, std::string>>;
std::string complete_response(int status, std::string_view reason, const FieldList& fields,
                              std::string_view body, bool head_request, bool close);

// Chunked framing (RFC 9112 §7.1): each chunk is its size line, its data and
// a CRLF; the last chunk is a zero size line and, with no trailers, a CRLF.
// A chunk of zero bytes would end the body, so callers never frame one.
void append_chunk_size(std::string& out, std::size_t size); // "1a\r\n" (hex, lower case)
void append_chunk_end(std::string& out);                    // "\r\n" after the chunk's data
void append_last_chunk(std::string& out);                   // "0\r\n\r\n"

} // namespace keyshim::util
