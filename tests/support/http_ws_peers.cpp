#include "support/http_ws_peers.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace keyshim::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t k_max_message = 32 * 1024 * 1024;
constexpr int k_max_messages = 1000; // per connection: every loop ends

// Every blocking call on `socket` gives up after 10 s.
void bound(tcp::socket& socket) {
  timeval limit{10, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

SeenRequest seen_of(const http::request<http::string_body>& request) {
  SeenRequest seen;
  seen.method = std::string(request.method_string());
  seen.target = std::string(request.target());
  for (const auto& field : request) {
    seen.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return seen;
}

template <class Stream> void write_refusal(Stream& socket, const Scripted& script) {
  http::response<http::string_body> response{static_cast<http::status>(script.status), 11};
  for (const auto& [name, value] : script.headers) {
    response.set(name, value);
  }
  for (const std::string& piece : script.pieces) {
    response.body() += piece;
  }
  response.keep_alive(false);
  response.prepare_payload();
  beast::error_code ec;
  http::write(socket, response, ec);
}

} // namespace

WsUpstream::WsUpstream() : m_acceptor(m_io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  m_port = m_acceptor.local_endpoint().port();
  m_thread = std::thread([this] { accept_loop(); });
}

WsUpstream::WsUpstream(const TestPki& pki)
    : m_tls(std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server)),
      m_acceptor(m_io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  m_tls->use_certificate_chain_file(pki.server_pem);
  m_tls->use_private_key_file(pki.server_key, asio::ssl::context::pem);
  m_port = m_acceptor.local_endpoint().port();
  m_thread = std::thread([this] { accept_loop(); });
}

WsUpstream::~WsUpstream() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    for (tcp::socket* socket : m_open) {
      ::shutdown(socket->native_handle(), SHUT_RDWR); // wakes a blocked read
    }
  }
  beast::error_code ec;
  tcp::socket wake(m_io);
  wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(m_port)), ec);
  m_thread.join();
  for (std::thread& worker : m_workers) {
    worker.join();
  }
}

void WsUpstream::refuse_next(Scripted answer) {
  std::lock_guard lock(m_mutex);
  m_refusals.push_back(std::move(answer));
}

void WsUpstream::behave(WsBehaviour behaviour) {
  std::lock_guard lock(m_mutex);
  m_behaviour = behaviour;
}

void WsUpstream::respond_with(std::vector<std::string> events) {
  std::lock_guard lock(m_mutex);
  m_events = std::move(events);
}

void WsUpstream::respond_next_connection_with(std::vector<std::string> events) {
  std::lock_guard lock(m_mutex);
  m_connection_events.push_back(std::move(events));
}

std::vector<SeenRequest> WsUpstream::handshakes() const {
  std::lock_guard lock(m_mutex);
  return m_handshakes;
}

std::vector<WsMessage> WsUpstream::received() const {
  std::lock_guard lock(m_mutex);
  return m_received;
}

std::optional<int> WsUpstream::wait_for_end(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(m_mutex);
  if (!m_changed.wait_for(lock, timeout, [this] { return !m_ends.empty(); })) {
    return std::nullopt;
  }
  return m_ends.back();
}

void WsUpstream::accept_loop() {
  for (int accepted = 0; accepted < 1000; ++accepted) {
    tcp::socket socket(m_io);
    beast::error_code ec;
    m_acceptor.accept(socket, ec);
    std::lock_guard lock(m_mutex);
    if (ec || m_stopping) {
      return;
    }
    m_workers.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
  }
}

void WsUpstream::serve(tcp::socket socket) {
  bound(socket);
  {
    std::lock_guard lock(m_mutex);
    m_open.push_back(&socket);
  }
  if (m_tls) {
    asio::ssl::stream<tcp::socket&> tls(socket, *m_tls);
    beast::error_code ec;
    tls.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) {
      serve_on(tls, socket);
    }
  } else {
    serve_on(socket, socket);
  }
  std::lock_guard lock(m_mutex);
  std::erase(m_open, &socket);
}

// One handshake on `stream` (plain or TLS over `raw`): refused as scripted,
// else accepted and served as the behaviour says.
template <class Stream> void WsUpstream::serve_on(Stream& stream, tcp::socket& raw) {
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  beast::error_code ec;
  http::read(stream, buffer, request, ec);
  if (ec) {
    return;
  }
  std::optional<Scripted> refusal;
  WsBehaviour behaviour;
  std::vector<std::string> events;
  {
    std::lock_guard lock(m_mutex);
    m_handshakes.push_back(seen_of(request));
    if (!m_refusals.empty()) {
      refusal = std::move(m_refusals.front());
      m_refusals.pop_front();
    }
    behaviour = m_behaviour;
    events = m_events;
    if (!refusal && !m_connection_events.empty()) {
      events = std::move(m_connection_events.front());
      m_connection_events.pop_front();
    }
  }
  if (refusal) {
    write_refusal(stream, *refusal);
    raw.shutdown(tcp::socket::shutdown_both, ec);
    return;
  }
  ws::stream<Stream&> socket(stream);
  socket.read_message_max(k_max_message);
  socket.accept(request, ec);
  if (!ec) {
    relay_messages(socket, behaviour, events);
  }
}

template <class Ws>
void WsUpstream::relay_messages(Ws& ws, WsBehaviour behaviour, const std::vector<std::string>& events) {
  beast::error_code ec;
  if (behaviour == WsBehaviour::greet_then_echo) {
    ws.text(true);
    ws.write(asio::buffer(std::string_view("hello")), ec);
  }
  for (int n = 0; n < k_max_messages && !ec; ++n) {
    beast::flat_buffer message;
    ws.read(message, ec);
    if (ec) {
      break;
    }
    {
      std::lock_guard lock(m_mutex);
      m_received.push_back({ws.got_text(), beast::buffers_to_string(message.data())});
    }
    if (behaviour == WsBehaviour::hang_up_after_first) {
      beast::get_lowest_layer(ws).shutdown(tcp::socket::shutdown_both, ec);
      ended(0);
      return;
    }
    if (behaviour == WsBehaviour::close_after_first) {
      ws.close(ws::close_reason(static_cast<ws::close_code>(4000), "bye"),
               ec); // waits for the answering close
      ended(ec ? 0 : ws.reason().code);
      return;
    }
    if (behaviour == WsBehaviour::respond) {
      ws.text(true);
      for (const std::string& event : events) {
        ws.write(asio::buffer(event), ec);
      }
      continue;
    }
    ws.text(ws.got_text());
    ws.write(message.data(), ec);
  }
  ended(ec == ws::error::closed ? ws.reason().code : 0);
}

void WsUpstream::ended(int code) {
  std::lock_guard lock(m_mutex);
  m_ends.push_back(code);
  m_changed.notify_all();
}

WsClient::WsClient(int port, const std::string& target,
                   std::vector<std::pair<std::string, std::string>> extra)
    : m_ws(m_io) {
  beast::error_code ec;
  m_ws.next_layer().connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) {
    return;
  }
  bound(m_ws.next_layer());
  m_ws.read_message_max(k_max_message);
  m_ws.set_option(ws::stream_base::decorator([extra](ws::request_type& request) {
    request.set(http::field::authorization, "Bearer keyshim");
    for (const auto& [name, value] : extra) {
      request.set(name, value);
    }
  }));
  m_ws.control_callback([this](ws::frame_type kind, beast::string_view payload) {
    if (kind == ws::frame_type::pong) {
      m_pongs.emplace_back(payload);
    }
  });
  ws::response_type response;
  m_ws.handshake(response, "127.0.0.1:" + std::to_string(port), target, ec);
  m_error = ec ? ec.message() : "";
  m_status = static_cast<int>(response.result_int());
  m_body = response.body();
}

void WsClient::send(const WsMessage& message) {
  m_ws.text(message.text);
  m_ws.write(asio::buffer(message.data));
}

std::optional<WsMessage> WsClient::read() {
  beast::flat_buffer message;
  beast::error_code ec;
  m_ws.read(message, ec);
  if (ec) {
    m_close_code = ec == ws::error::closed ? m_ws.reason().code : 0;
    m_close_reason = ec == ws::error::closed ? std::string(m_ws.reason().reason.c_str()) : ec.message();
    return std::nullopt;
  }
  return WsMessage{m_ws.got_text(), beast::buffers_to_string(message.data())};
}

} // namespace keyshim::test
