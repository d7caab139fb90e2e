#include "relay/ws_tunnel.hpp"

#include "util/duration.hpp"

#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <random>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// The most read from one side at once.
constexpr std::size_t k_read_size = 64 * 1024;
// How long closing may take: keyshim's own close frames leaving, the
// peers' answering ones and their hang-ups arriving.
constexpr auto k_close_grace = seconds(2);
// The longest upstream text message read_texts() passes on.
constexpr std::size_t k_max_text_read = 1024 * 1024;

constexpr std::uint16_t k_going_away = 1001;
constexpr std::uint16_t k_protocol_error = 1002;
constexpr std::uint16_t k_too_big = 1009;
constexpr std::uint16_t k_internal_error = 1011;

std::uint32_t random_mask() {
  static std::mt19937 generator{std::random_device{}()};
  return static_cast<std::uint32_t>(generator());
}

} // namespace

WsTunnel::WsTunnel(Socket& client, std::shared_ptr<UpstreamConn> upstream, util::MonoClock& mono,
                   milliseconds idle_timeout, Closed closed)
    : m_client(client), m_upstream(std::move(upstream)), m_mono(mono), m_idle_timeout(idle_timeout),
      m_closed(std::move(closed)), m_timer(client.get_executor()) {
  m_up.buffer.reset(new char[k_read_size]);
  m_down.buffer.reset(new char[k_read_size]);
}

void WsTunnel::read_texts(Texts on_text) {
  m_on_text = std::move(on_text);
  m_down.scanner.capture_texts(k_max_text_read);
}

void WsTunnel::start(std::string head, std::string from_client, std::string from_upstream) {
  m_last_activity = m_mono.now();
  arm_idle();
  m_down.scanner.feed(from_upstream); // the upstream's first frames; the head is not framed
  pass_texts();
  m_down.first = std::move(head) + from_upstream;
  write(Way::down, m_down.first);
  if (from_client.empty()) {
    read(Way::up);
    return;
  }
  m_up.first = std::move(from_client);
  if (m_up.scanner.feed(m_up.first) != WsFrameScanner::Result::ok) {
    end({"the client's first frame was refused", k_protocol_error, k_going_away});
    return;
  }
  write(Way::up, m_up.first);
}

void WsTunnel::read(Way way) {
  Direction& d = of(way);
  d.step = Step::reading;
  auto done = [self = shared_from_this(), way](const ErrorCode& ec, std::size_t n) {
    self->on_read(way, ec, n);
  };
  asio::mutable_buffer into(d.buffer.get(), k_read_size);
  if (way == Way::up) {
    m_client.async_read_some(into, std::move(done));
  } else {
    m_upstream->with_stream([&](auto& stream) { stream.async_read_some(into, std::move(done)); });
  }
}

void WsTunnel::on_read(Way way, const ErrorCode& ec, std::size_t n) {
  of(way).step = Step::idle;
  if (m_phase == Phase::closing) {
    on_lingered(way, ec);
    return;
  }
  if (m_phase != Phase::open) {
    return;
  }
  if (ec) {
    side_gone(way, ec);
    return;
  }
  m_last_activity = m_mono.now();
  std::string_view data(of(way).buffer.get(), n);
  switch (of(way).scanner.feed(data)) {
  case WsFrameScanner::Result::ok:
    if (way == Way::down) {
      pass_texts();
    }
    write(way, data);
    break;
  case WsFrameScanner::Result::too_big: {
    std::string why = fmt::format("a message over {} MiB from the {}", k_max_ws_message >> 20,
                                  way == Way::up ? "client" : "upstream");
    end(way == Way::up ? Ending{why, k_too_big, 0} : Ending{why, 0, k_too_big});
    break;
  }
  case WsFrameScanner::Result::malformed:
    end(way == Way::up ? Ending{"a malformed frame from the client", k_protocol_error, k_going_away}
                       : Ending{"a malformed frame from the upstream", k_internal_error, k_protocol_error});
    break;
  }
}

void WsTunnel::write(Way way, std::string_view data) {
  of(way).step = Step::writing;
  auto done = [self = shared_from_this(), way](const ErrorCode& ec, std::size_t n) {
    self->on_written(way, ec, n);
  };
  asio::const_buffer from(data.data(), data.size());
  if (way == Way::down) {
    asio::async_write(m_client, from, std::move(done));
  } else {
    m_upstream->with_stream([&](auto& stream) { asio::async_write(stream, from, std::move(done)); });
  }
}

void WsTunnel::on_written(Way way, const ErrorCode& ec, std::size_t n) {
  Direction& d = of(way);
  d.step = Step::idle;
  d.bytes += n;
  if (m_phase == Phase::closing) {
    if (d.close == Direction::Close::queued) {
      write_close(way);
    }
    read(way); // drain what the source still sends until it hangs up
    return;
  }
  if (m_phase != Phase::open) {
    return;
  }
  if (ec) {
    side_gone(way == Way::up ? Way::down : Way::up, ec); // the receiving side is gone
    return;
  }
  d.first.clear();
  read(way);
}

// The side `way` reads from hung up (or failed). A close frame it sent
// first makes this the end of a clean close; without one, the other side
// hears of it in a close frame of keyshim's own.
void WsTunnel::side_gone(Way way, const ErrorCode& ec) {
  of(way).step = Step::ended;
  bool clean = of(way).scanner.close_seen();
  if (way == Way::up) {
    end({clean ? "client closed" : "client went away (" + ec.message() + ")", 0,
         clean ? std::uint16_t{0} : k_going_away});
  } else {
    end({clean ? "upstream closed" : "upstream went away (" + ec.message() + ")",
         clean ? std::uint16_t{0} : k_internal_error, 0});
  }
}

void WsTunnel::abort(const std::string& why) {
  if (m_phase == Phase::open) {
    end({why, k_going_away, k_going_away});
  }
}

void WsTunnel::end(Ending ending) {
  m_phase = Phase::closing;
  m_why = std::move(ending.why);
  if (ending.to_client != 0) {
    send_close(Way::down, ending.to_client, m_why);
  }
  if (ending.to_upstream != 0) {
    send_close(Way::up, ending.to_upstream, m_why);
  }
  m_timer.cancel();
  m_timer.arm(m_mono.now() + k_close_grace, [self = shared_from_this()] { self->close_both(); });
  if (m_closes_pending == 0) {
    linger();
  }
}

// A close frame on the way `way` writes, when that side is between frames
// and has not been sent one; written after a write in progress.
void WsTunnel::send_close(Way way, std::uint16_t code, const std::string& reason) {
  Direction& d = of(way);
  if (!d.scanner.at_boundary() || d.scanner.close_seen()) {
    return;
  }
  d.close_frame = ws_close_frame(code, reason, way == Way::up, random_mask());
  d.close = Direction::Close::queued;
  ++m_closes_pending;
  if (d.step != Step::writing) {
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
  m_upstream->socket().shutdown(tcp::socket::shutdown_send, ignored);
  for (Way way : {Way::up, Way::down}) {
    if (of(way).step == Step::idle) {
      read(way);
    }
  }
  if (m_up.step == Step::ended && m_down.step == Step::ended) {
    close_both();
  }
}

// While closing, a read ends a side when it fails or finds the end of the
// stream; anything else that arrives is discarded.
void WsTunnel::on_lingered(Way way, const ErrorCode& ec) {
  if (ec) {
    of(way).step = Step::ended;
  } else if (of(way).step == Step::idle) {
    read(way);
  }
  if (m_up.step == Step::ended && m_down.step == Step::ended) {
    close_both();
  }
}

void WsTunnel::close_both() {
  if (m_phase == Phase::closed) {
    return;
  }
  m_phase = Phase::closed;
  m_timer.cancel();
  ErrorCode ignored;
  m_client.shutdown(tcp::socket::shutdown_both, ignored);
  m_client.close(ignored);
  m_upstream->close();
  Summary summary{m_up.bytes, m_down.bytes, m_up.scanner.messages(), m_down.scanner.messages(), m_why};
  m_on_text = nullptr;
  Closed closed = std::move(m_closed); // runs once; it may drop the last reference to this tunnel
  closed(summary);
}

void WsTunnel::pass_texts() {
  if (!m_on_text) {
    return;
  }
  for (const std::string& text : m_down.scanner.take_texts()) {
    m_on_text(text);
  }
}

void WsTunnel::arm_idle() {
  m_timer.arm(m_last_activity + m_idle_timeout, [self = shared_from_this()] { self->on_timer(); });
}

// Silence in both directions for idle_timeout ends the tunnel; any byte
// either way moves the deadline (checked here, never re-armed per read).
void WsTunnel::on_timer() {
  if (m_phase != Phase::open) {
    return;
  }
  if (m_mono.now() < m_last_activity + m_idle_timeout) {
    arm_idle();
    return;
  }
  end({fmt::format("idle for {}", util::format_duration(m_idle_timeout)), k_going_away, k_going_away});
}

} // namespace keyshim::relay
