// The soak upstream's WebSocket echo: see soak_upstream_ws.hpp.
#include "soak_upstream_ws.hpp"

#include "soak_common.hpp"
#include "soak_watchdog.hpp"

#include <utility> // before Asio: awaitable.hpp uses std::exchange (NOTES-beast item 7)

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <cstdio>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

constexpr std::size_t k_max_message = 1024 * 1024;

// Echoes the script's messages; true when the upstream must now hang up.
bool echo(websocket::stream<tcp::socket&>& ws, const soak::WsScript& script, soak::Watchdog& dog,
          const std::atomic<bool>& stop) {
  beast::flat_buffer buf;
  beast::error_code ec;
  for (int i = 0; i <= script.messages && !stop; ++i) { // the last read takes the client's close
    ws.read(buf, ec);
    if (!ec && i == script.upstream_cut_after) {
      // Only now: the client got the last echo whole before it sent this
      // message, and a reset drops what the send buffer still holds.
      return true;
    }
    if (ec) {
      if (ec != websocket::error::closed) {
        std::fprintf(stderr, "soak upstream: websocket read %d: %s\n", i, ec.message().c_str());
      }
      return false;
    }
    dog.kick();
    ws.text(ws.got_text());
    ws.write(buf.data(), ec);
    if (ec) {
      std::fprintf(stderr, "soak upstream: websocket write %d: %s\n", i, ec.message().c_str());
      return false;
    }
    buf.consume(buf.size());
    dog.kick();
  }
  return false;
}

} // namespace

void serve_ws(int fd, const std::string& head, const std::string& key_id, const std::string& at,
              std::uint64_t seed, const std::atomic<bool>& stop) {
  asio::io_context io(1);
  tcp::socket socket(io);
  beast::error_code ec;
  int own = ::dup(fd); // the socket closes its own copy; the caller keeps fd's one close
  socket.assign(tcp::v4(), own, ec);
  if (ec) {
    ::close(own);
    return;
  }
  soak::Watchdog dog(fd, 30s);
  websocket::stream<tcp::socket&> ws(socket);
  ws.read_message_max(k_max_message);
  ws.set_option(websocket::stream_base::decorator([&](websocket::response_type& res) {
    res.set("X-Soak-Key", key_id);
    res.set("X-Soak-At", at);
  }));
  ws.accept(asio::buffer(head), ec);
  if (ec) {
    return;
  }
  if (echo(ws, soak::ws_script(seed), dog, stop)) {
    soak::arm_reset(fd); // abrupt: a reset once both copies are closed, no close frame
  }
}
