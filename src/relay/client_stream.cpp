#include "relay/client_stream.hpp"

#include "relay/redact.hpp"
#include "relay/socket_send.hpp"
#include "util/http_text.hpp"

#include <algorithm>
#include <optional>

namespace keyshim::relay {

Framing framing_for(http::verb method, unsigned client_version, int status, bool has_content_length) {
  if (method == http::verb::head || status == 204 || status == 304) {
    return Framing::none;
  }
  if (has_content_length) {
    return Framing::content_length;
  }
  return client_version >= 11 ? Framing::chunked : Framing::close;
}

void ClientStream::begin(const ResponseParser& upstream, const RequestHead& request, bool keep_alive,
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

// A piece is written at once when the socket has room: a write posted to the
// event loop costs a turn of it, and each turn an epoll_wait call, per piece.
// The socket is in non-blocking mode for this (set once per connection; the
// asynchronous operations would set it anyway).
std::size_t ClientStream::send_now(const Buffers& buffers, ErrorCode& ec) {
  return send_without_waiting(m_socket, buffers, ec);
}

ClientStream::Buffers ClientStream::rest_of(Buffers buffers, std::size_t sent) {
  for (asio::const_buffer& buffer : buffers) {
    std::size_t skip = std::min(sent, buffer.size());
    buffer += skip;
    sent -= skip;
  }
  return buffers;
}

void ClientStream::frame(std::size_t size, bool last) {
  m_suffix.clear();
  if (m_framing != Framing::chunked) {
    return;
  }
  if (size != 0) {
    util::append_chunk_size(m_prefix, size);
    util::append_chunk_end(m_suffix);
  }
  if (last) {
    util::append_last_chunk(m_suffix);
  }
}

} // namespace keyshim::relay
