#include "relay/client_stream.hpp"

#include "relay/redact.hpp"

#include <fmt/format.h>

#include <optional>

namespace keyshim::relay {
namespace {

constexpr std::string_view k_crlf = "\r\n";
constexpr std::string_view k_last_chunk = "0\r\n\r\n";

} // namespace

Framing framing_for(http::verb method, unsigned client_version, int status, bool has_content_length) {
  if (method == http::verb::head || status == 204 || status == 304) {
    return Framing::none;
  }
  if (has_content_length) {
    return Framing::content_length;
  }
  return client_version >= 11 ? Framing::chunked : Framing::close;
}

void ClientStream::begin(const ResponseParser& upstream, const http::request_header<>& request, bool keep_alive,
                         const Redactor& redact) {
  const auto& head = upstream.get();
  std::optional<std::uint64_t> length;
  if (auto declared = upstream.content_length()) {
    length = *declared;
  }
  m_framing = framing_for(request.method(), request.version(), static_cast<int>(head.result_int()),
                          length.has_value());
  m_close_after = !keep_alive || m_framing == Framing::close;
  m_prefix = client_head(head, m_framing, length, m_close_after, redact);
}

void ClientStream::frame(std::size_t size, bool last) {
  m_suffix.clear();
  if (m_framing != Framing::chunked) {
    return;
  }
  if (size != 0) {
    fmt::format_to(std::back_inserter(m_prefix), "{:x}\r\n", size);
    m_suffix = k_crlf;
  }
  if (last) {
    m_suffix += k_last_chunk;
  }
}

} // namespace keyshim::relay
