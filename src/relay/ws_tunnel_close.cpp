// How a WsTunnel ends: close frames of keyshim's own where a frame boundary
// allows, then a lingering read on both sides until each hangs up.
#include "relay/ws_tunnel.hpp"

#include <boost/asio/write.hpp>

#include <type_traits>
#include <utility>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// How long closing may take: keyshim's own close frames leaving, the
// peers' answering ones and their hang-ups arriving.
constexpr auto k_close_grace = seconds(2);

} // namespace

void WsTunnel::end(Ending ending) {
  if (m_phase == Phase::diverted) {
    m_down.ended = true; // the old upstream is gone and no new one is attached
    ending.to_upstream = 0;
  }
  m_phase = Phase::closing;
  m_why = std::move(ending.why);
  if (ending.to_client != 0) {
    send_close(Way::down, ending.to_client, m_why);
  }
  if (ending.to_upstream != 0) {
    send_close(Way::up, ending.to_upstream, m_why);
  }
  m_alarm.cancel(); // the idle deadline is over: from now on the alarm is the close grace
  m_alarm.arm(m_mono.now() + k_close_grace);
  if (m_closes_pending == 0) {
    linger();
  }
}

// A close frame on the way `way` writes, when that side is between frames
// and has not been sent one; written after a write in progress. Bytes
// already in close_frame (a given-up turn's event) go before it.
void WsTunnel::send_close(Way way, std::uint16_t code, const std::string& reason) {
  Direction& d = of(way);
  if (!d.scanner.at_boundary() || d.scanner.close_seen()) {
    return;
  }
  d.close_frame += ws_close_frame(code, reason, way == Way::up, ws_random_mask());
  d.close = Direction::Close::queued;
  ++m_closes_pending;
  if (!d.writing) {
    write_close(way);
  }
}

void WsTunnel::write_close(Way way) {
  Direction& d = of(way);
  d.close = Direction::Close::sent;
  auto done = [self = shared_from_this()](const ErrorCode&, std::size_t) { self->on_close_written(); };
  asio::const_buffer frame = asio::buffer(d.close_frame);
  if (way == Way::down) {
    asio::async_write(m_client, frame, std::move(done));
  } else {
    m_upstream->with_stream([&](auto& stream) { asio::async_write(stream, frame, std::move(done)); });
  }
}

void WsTunnel::on_close_written() {
  if (--m_closes_pending == 0 && m_phase == Phase::closing) {
    linger();
  }
}

// Nothing more is sent either way: each side reads its end of the stream
// (FIN), answers any close frame, and hangs up, which is read here.
void WsTunnel::linger() {
  ErrorCode ignored;
  m_client.shutdown(tcp::socket::shutdown_send, ignored);
  // TLS ends with close_notify, as nginx sends it, where no read is pending
  // on the stream (the upstream has ended its side); else with a FIN.
  m_upstream->with_stream([&](auto& stream) {
    if constexpr (std::is_same_v<std::decay_t<decltype(stream)>, TlsSocket>) {
      if (!m_down.reading) {
        stream.async_shutdown(
            [self = shared_from_this(), conn = m_upstream](const ErrorCode&, std::size_t) {});
        return;
      }
    }
    m_upstream->socket().shutdown(tcp::socket::shutdown_send, ignored);
  });
  for (Way way : {Way::up, Way::down}) {
    Direction& d = of(way);
    if (!d.reading && !d.writing && !d.ended) {
      read(way);
    }
  }
  if (m_up.ended && m_down.ended) {
    close_both();
  }
}

// While closing, a read ends a side when it fails or finds the end of the
// stream; anything else that arrives is discarded.
void WsTunnel::on_lingered(Way way, const ErrorCode& ec) {
  if (ec) {
    of(way).ended = true;
  } else {
    read(way);
  }
  if (m_up.ended && m_down.ended) {
    close_both();
  }
}

void WsTunnel::close_both() {
  if (m_phase == Phase::closed) {
    return;
  }
  m_phase = Phase::closed;
  m_alarm.cancel();
  ErrorCode ignored;
  m_client.shutdown(tcp::socket::shutdown_both, ignored);
  m_client.close(ignored);
  m_upstream->close();
  Summary summary{m_up.bytes,     m_down.bytes, m_up.scanner.messages(), m_down.scanner.messages(),
                  m_turns_resent, m_why};
  std::shared_ptr<Events> events = std::move(m_events); // the last call; it may drop this tunnel
  events->tunnel_closed(summary);
}

} // namespace keyshim::relay
