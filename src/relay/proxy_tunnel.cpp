#include "relay/proxy_tunnel.hpp"

#include "util/http_text.hpp"
#include "util/secret.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include <fmt/format.h>

#include <memory>

namespace keyshim::relay {
namespace {

std::string authority_of(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

// The reason phrase comes from the proxy and goes into logs: printable ASCII
// only, and not much of it.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

// One CONNECT exchange. Shared by its pending handlers, like UpstreamConn.
class Tunnel : public std::enable_shared_from_this<Tunnel> {
public:
  Tunnel(Socket& socket, const config::ProxyUrl& proxy, std::string request, TunnelDone done)
      : m_socket(socket), m_proxy(proxy.authority()), m_with_credentials(proxy.authorization.has_value()),
        m_request(std::move(request)), m_buffer(k_max_proxy_reply), m_done(std::move(done)) {
    m_parser.header_limit(static_cast<std::uint32_t>(k_max_proxy_reply));
  }
  ~Tunnel() { util::wipe(m_request); }
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  void start() {
    asio::async_write(
        m_socket, asio::buffer(m_request),
        [self = shared_from_this()](const ErrorCode& ec, std::size_t) { self->on_written(ec); });
  }

private:
  void on_written(const ErrorCode& ec) {
    util::wipe(m_request); // it may hold the proxy's credentials
    if (ec) {
      finish(fmt::format("cannot send CONNECT to proxy {}: {}", m_proxy, ec.message()));
      return;
    }
    http::async_read_header(
        m_socket, m_buffer, m_parser,
        [self = shared_from_this()](const ErrorCode& e, std::size_t) { self->on_head(e); });
  }

  void on_head(const ErrorCode& ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      finish(
          fmt::format("proxy {} sent a CONNECT reply head over {} KiB", m_proxy, k_max_proxy_reply / 1024));
      return;
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) {
      finish(fmt::format("proxy {} closed the connection without answering CONNECT", m_proxy));
      return;
    }
    if (ec) {
      finish(fmt::format("proxy {} gave no usable answer to CONNECT: {}", m_proxy, ec.message()));
      return;
    }
    const auto& reply = m_parser.get();
    unsigned status = reply.result_int();
    if (status < 200 || status > 299) {
      std::string hint;
      // 407 is the standard answer; some proxies (tinyproxy 1.11) send 401.
      if (status == 407 || status == 401) {
        hint = m_with_credentials ? "; check the user and password in the proxy URL"
                                  : "; give them in the proxy URL as http://user:password@host:port";
      }
      finish(
          fmt::format("proxy {} refused CONNECT: {} {}{}", m_proxy, status, printable(reply.reason()), hint));
      return;
    }
    // A tunnel carries nothing before the client speaks (TLS and HTTP both
    // start with the client), so bytes here would be spliced into the
    // upstream's stream: refuse rather than guess what they are.
    if (m_buffer.size() != 0) {
      finish(
          fmt::format("proxy {} sent {} unexpected bytes after its CONNECT reply", m_proxy, m_buffer.size()));
      return;
    }
    finish("");
  }

  void finish(const std::string& failure) {
    TunnelDone done = std::move(m_done);
    m_done = nullptr;
    if (done) {
      done(failure);
    }
  }

  Socket& m_socket;
  std::string m_proxy; // host:port, for messages
  bool m_with_credentials;
  std::string m_request;
  beast::flat_buffer m_buffer; // capped: a reply head cannot grow it past k_max_proxy_reply
  http::response_parser<http::empty_body> m_parser;
  TunnelDone m_done;
};

} // namespace

std::string connect_request(const config::ProxyUrl& proxy, const std::string& host, int port) {
  std::string target = authority_of(host, port);
  std::string request;
  // Reserved up front so that no reallocation leaves a copy of the
  // credentials behind in freed memory.
  request.reserve(2 * target.size() + 64 + (proxy.authorization ? proxy.authorization->reveal().size() : 0));
  util::append_request_line(request, "CONNECT", target);
  util::append_field(request, "Host", target);
  if (proxy.authorization) {
    util::append_field(request, "Proxy-Authorization", proxy.authorization->reveal());
  }
  util::end_head(request);
  return request;
}

void open_tunnel(Socket& socket, const config::ProxyUrl& proxy, const std::string& host, int port,
                 TunnelDone done) {
  std::make_shared<Tunnel>(socket, proxy, connect_request(proxy, host, port), std::move(done))->start();
}

} // namespace keyshim::relay
