#pragma once
// Writing one response to the client: from the commit point, the head and
// then the body pieces in the framing the client needs; or one whole answer
// (an upstream error, a 502, a 503). Holds the bytes of a write until it
// completes. Event-loop thread only.
#include "relay/answers.hpp"
#include "relay/beast.hpp"
#include "relay/header_rules.hpp"

#include <boost/asio/write.hpp>

#include <array>
#include <string>
#include <string_view>

namespace keyshim::relay {

class Redactor;

// How the body of a committed response is framed towards the client: none
// for HEAD, 204 and 304; the upstream's Content-Length when it sent one;
// else chunked for HTTP/1.1 and ended by close for HTTP/1.0.
Framing framing_for(http::verb method, unsigned client_version, int status, bool has_content_length);

class ClientStream {
public:
  explicit ClientStream(Socket& socket) : m_socket(socket) {}

  // The commit point: the head for the upstream's response, written with
  // the first piece. `keep_alive`: the client's connection may serve another
  // request after this one.
  void begin(const ResponseParser& upstream, const RequestHead& request, bool keep_alive,
             const Redactor& redact);
  // One write per piece: the head the first time, the chunk framing around
  // `data`, and the last-chunk when `last`. `done(ec)` runs when written:
  // before write() returns when the socket took every byte at once (the
  // usual case), so a caller's write must be its last step.
  template <class Handler> void write(std::string_view data, bool last, Handler done) {
    frame(data.size(), last);
    std::array<asio::const_buffer, 3> buffers = {
        asio::buffer(m_prefix), asio::buffer(data.data(), data.size()), asio::buffer(m_suffix)};
    ErrorCode ec;
    std::size_t sent = send_now(buffers, ec);
    if (ec || sent == asio::buffer_size(buffers)) {
      m_prefix.clear(); // the head went with the first piece
      done(ec);
      return;
    }
    asio::async_write(m_socket, rest_of(buffers, sent),
                      [this, done = std::move(done)](const ErrorCode& error, std::size_t) mutable {
                        m_prefix.clear();
                        done(error);
                      });
  }
  // A whole answer instead of a relayed response: with `Connection: close`
  // when `close`, without its body for a HEAD request.
  template <class Handler> void answer(const Answer& answer, bool head_request, bool close, Handler done) {
    m_prefix = serialize(answer, head_request, close);
    asio::async_write(m_socket, asio::buffer(m_prefix),
                      [done = std::move(done)](const ErrorCode& ec, std::size_t) mutable { done(ec); });
  }

  // After begin(): the connection ends after this response.
  bool close_after() const { return m_close_after; }
  // After begin(): the body is sent as it arrives, its end unknown in advance.
  bool streamed() const { return m_framing == Framing::chunked || m_framing == Framing::close; }

private:
  using Buffers = std::array<asio::const_buffer, 3>;
  void frame(std::size_t size, bool last);
  // As much of `buffers` as the socket takes without waiting; would_block
  // is no error.
  std::size_t send_now(const Buffers& buffers, ErrorCode& ec);
  // `buffers` without their first `sent` bytes.
  static Buffers rest_of(Buffers buffers, std::size_t sent);

  Socket& m_socket;
  Framing m_framing = Framing::chunked;
  bool m_close_after = false;
  std::string m_prefix; // the response head and/or a chunk size line
  std::string m_suffix; // a chunk's end and/or the last-chunk
};

} // namespace keyshim::relay
