// The WebSocket echo of the side-by-side benchmark (see mock_ws.hpp). Beast
// on one io_context thread, coroutines; what is measured is the proxy in
// front of it, so it does the least a WebSocket server can: read a message,
// write it back.
#include "mock_ws.hpp"

#include <utility> // before Asio: awaitable.hpp uses std::exchange (NOTES-beast item 7)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <cstdio>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using TcpStream = beast::basic_stream<tcp, Executor>;

constexpr std::size_t k_max_message = 64 * 1024 * 1024;

// Echoes messages until the client closes or fails.
asio::awaitable<void> echo(websocket::stream<TcpStream>& ws) {
  beast::error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);
  beast::flat_buffer buf;
  for (;;) {
    co_await ws.async_read(buf, tok);
    if (ec) {
      co_return;
    }
    ws.text(ws.got_text());
    co_await ws.async_write(buf.data(), tok);
    if (ec) {
      co_return;
    }
    buf.consume(buf.size());
  }
}

// One connection: a WebSocket upgrade is accepted and echoed; anything else
// is answered 426 and closed (what a plain GET through a proxy that drops
// `Upgrade` gets).
asio::awaitable<void> serve(Socket socket) {
  beast::error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);
  socket.set_option(tcp::no_delay(true), ec);
  TcpStream stream(std::move(socket));
  beast::flat_buffer buf;
  http::request<http::string_body> req;
  stream.expires_after(std::chrono::seconds(30));
  co_await http::async_read(stream, buf, req, tok);
  if (ec) {
    co_return;
  }
  stream.expires_never();
  if (!websocket::is_upgrade(req)) {
    http::response<http::string_body> res{http::status::upgrade_required, req.version()};
    res.set(http::field::upgrade, "websocket");
    res.set(http::field::connection, "close");
    res.body() = "websocket only\n";
    res.prepare_payload();
    co_await http::async_write(stream, res, tok);
    co_return;
  }
  websocket::stream<TcpStream> ws(std::move(stream));
  ws.read_message_max(k_max_message);
  ws.auto_fragment(false);
  co_await ws.async_accept(req, tok);
  if (!ec) {
    co_await echo(ws);
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, asio::io_context& io) {
  beast::error_code ec;
  for (;;) {
    Socket socket(io);
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted) {
      co_return;
    }
    if (!ec) {
      asio::co_spawn(io, serve(std::move(socket)), asio::detached);
    }
  }
}

} // namespace

int run_ws_echo(int port, long max_seconds) {
  asio::io_context io(1);
  beast::error_code ec;
  tcp::endpoint where(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(port));
  tcp::acceptor acceptor(io);
  acceptor.open(where.protocol(), ec);
  if (!ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(where, ec);
  }
  if (!ec) {
    acceptor.listen(4096, ec);
  }
  if (ec) {
    fprintf(stderr, "mock_upstream: cannot listen on 127.0.0.1:%d: %s\n", port, ec.message().c_str());
    return 1;
  }
  printf("port=%d\n", acceptor.local_endpoint().port());
  fflush(stdout);
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](beast::error_code, int) { io.stop(); });
  asio::steady_timer limit(io, std::chrono::seconds(max_seconds));
  limit.async_wait([&io](beast::error_code e) {
    if (!e) {
      io.stop();
    }
  });
  asio::co_spawn(io, accept_loop(acceptor, io), asio::detached);
  io.run();
  return 0;
}
