// A soak WebSocket session through keyshim (Beast, synchronous, bounded by a
// watchdog): the handshake, the seed's round trips of random messages (1 B
// to 256 KiB, text or binary), each echo compared byte for byte; a client
// hang-up (an abrupt reset) when the plan says so; and, when the upstream's
// script hangs up, a close or EOF where the next echo would be.
#include "soak_stream.hpp"
#include "soak_watchdog.hpp"

#include <utility> // before Asio: awaitable.hpp uses std::exchange (NOTES-beast item 7)

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

namespace soak {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

constexpr std::size_t k_max_ws_message = 256 * 1024;

// Message `i` of a session: mostly small, one in four up to 256 KiB; text
// is printable ASCII, binary any byte.
std::string ws_message(SplitMix& rng, bool& text) {
  text = rng.below(2) == 0;
  std::size_t size = 1 + static_cast<std::size_t>(rng.below(rng.below(4) == 0 ? k_max_ws_message : 4096));
  if (text) {
    return filler(rng, size);
  }
  std::string out(size, '\0');
  for (auto& c : out) {
    c = static_cast<char>(rng.next() & 0xff);
  }
  return out;
}

struct Session {
  websocket::stream<tcp::socket&>& ws;
  Watchdog& dog;
  StreamResult result{Outcome::completed, 101, 0, {}};
};

// One round trip; false ends the session (the result says why).
bool round_trip(Session& s, const std::string& message, bool text, bool upstream_gone) {
  beast::error_code ec;
  s.ws.text(text);
  s.ws.write(asio::buffer(message), ec);
  beast::flat_buffer buf;
  if (!ec) {
    s.ws.read(buf, ec);
  }
  s.dog.kick();
  if (ec || upstream_gone) {
    bool expected = upstream_gone && !s.dog.fired();
    s.result.outcome = expected ? Outcome::broken_expected : Outcome::violation;
    s.result.detail = s.dog.fired() ? "websocket: no progress within the timeout"
                      : ec          ? "websocket: " + ec.message() + " on a healthy session"
                                    : "websocket: an echo after the upstream hung up";
    return false;
  }
  std::string got = beast::buffers_to_string(buf.data());
  if (got != message || s.ws.got_text() != text) {
    s.result.outcome = Outcome::violation;
    s.result.detail = "websocket: echo of " + std::to_string(message.size()) + " bytes differs (" +
                      std::to_string(got.size()) + " bytes came back)";
    return false;
  }
  s.result.bytes += got.size();
  ++s.result.messages;
  return true;
}

StreamResult handshake_failed(const websocket::response_type& res, const beast::error_code& ec, bool fired) {
  int status = static_cast<int>(res.result_int());
  if (!fired && ec == websocket::error::upgrade_declined) {
    // An answer other than 101 (keyshim's 503 with no key, a 502 after the
    // attempts): Beast (1.74) leaves `res` unfilled then, so its status and
    // head are unknown here; an error status, not a violation.
    return {Outcome::error_status, 0, 0, {}};
  }
  std::string seen = "HTTP/" + std::to_string(res.version()) + " " + std::to_string(status);
  for (const auto& field : res) {
    seen += "; " + std::string(field.name_string()) + ": " + std::string(field.value()).substr(0, 60);
  }
  seen += "; body " + std::to_string(res.body().size()) + " bytes \"" + res.body().substr(0, 80) + "\"";
  for (auto& c : seen) {
    c = (c >= ' ' && c <= '~') ? c : '.';
  }
  return {Outcome::violation, status, 0, "websocket handshake: " + ec.message() + " (" + seen + ")"};
}

} // namespace

StreamResult run_ws(int port, const StreamPlan& plan, int timeout_s, KeyBook& keys) {
  asio::io_context io(1);
  tcp::socket socket(io);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(port)),
                 ec);
  if (ec) {
    return {Outcome::violation, 0, 0, "cannot connect to keyshim: " + ec.message()};
  }
  Watchdog dog(socket.native_handle(), std::chrono::seconds(timeout_s));
  websocket::stream<tcp::socket&> ws(socket);
  ws.read_message_max(2 * k_max_ws_message);
  websocket::response_type res;
  ws.handshake(res, "127.0.0.1:" + std::to_string(port),
               "/soak/ws/" + std::to_string(plan.id) + "/" + std::to_string(plan.seed), ec);
  if (ec) {
    return handshake_failed(res, ec, dog.fired());
  }
  std::string key_id(res["X-Soak-Key"]);
  std::int64_t at = std::strtoll(std::string(res["X-Soak-At"]).c_str(), nullptr, 10);
  if (keys.retired_before(key_id, at)) {
    return {Outcome::violation, 101, 0,
            "websocket served by key " + key_id + " after the reload that dropped it"};
  }
  WsScript script = ws_script(plan.seed);
  SplitMix rng{plan.seed};
  int hangup_at = plan.hangup == Hangup::none ? 1 << 30 : static_cast<int>(plan.hangup_after % 8);
  Session s{ws, dog};
  for (int i = 0; i < script.messages; ++i) {
    if (i == hangup_at) {
      arm_reset(socket.native_handle()); // the socket's close, after the watchdog's end, resets
      return {Outcome::hung_up, 101, s.result.bytes, {}};
    }
    bool text = false;
    std::string message = ws_message(rng, text);
    if (!round_trip(s, message, text, i == script.upstream_cut_after)) {
      return s.result;
    }
  }
  ws.close(websocket::close_code::normal, ec); // an error after the close frames is no fault
  if (dog.fired()) {
    return {Outcome::violation, 101, s.result.bytes,
            "websocket: the close did not complete within the timeout"};
  }
  return s.result;
}

} // namespace soak
