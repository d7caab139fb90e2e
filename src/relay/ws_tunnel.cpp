#include "relay/ws_tunnel.hpp"

#include "policy/socket_event.hpp"
#include "relay/socket_read.hpp"
#include "util/duration.hpp"

#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <utility>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// The most read from one side at once.
constexpr std::size_t k_read_size = 64 * 1024;
// The longest text message read_events() reads (longer ones pass unread).
constexpr std::size_t k_max_text_read = 1024 * 1024;
// What a client may send while its turn moves to another upstream.
constexpr std::size_t k_max_held_up = 1024 * 1024;

constexpr std::uint16_t k_going_away = 1001;
constexpr std::uint16_t k_protocol_error = 1002;
constexpr std::uint16_t k_too_big = 1009;
constexpr std::uint16_t k_internal_error = 1011;

} // namespace

WsTunnel::WsTunnel(Socket& client, std::shared_ptr<UpstreamConn> upstream, util::MonoClock& mono,
                   AlarmSource& alarms, milliseconds idle_timeout, std::shared_ptr<Events> events)
    : m_client(client), m_upstream(std::move(upstream)), m_mono(mono), m_idle_timeout(idle_timeout),
      m_events(std::move(events)), m_alarm(alarms, *this) {
  m_up.buffer.reset(new char[k_read_size]);
  m_down.buffer.reset(new char[k_read_size]);
}

void WsTunnel::read_events() {
  m_read_events = true;
  m_up.scanner.capture_texts(k_max_text_read);
  m_down.scanner.capture_texts(k_max_text_read);
}

void WsTunnel::start(std::string head, std::string from_client, const std::string& from_upstream) {
  m_last_activity = m_mono.now();
  arm_idle();
  m_down.scanner.feed(from_upstream); // frames that came with the 101; the head is not framed
  for (const std::string& text : m_down.scanner.take_texts()) {
    m_events->upstream_text(text);
  }
  m_down.out = std::move(head) + from_upstream;
  write(Way::down, m_down.out);
  if (from_client.empty()) {
    read(Way::up);
    return;
  }
  m_up.out = std::move(from_client);
  this->from_client(m_up.out);
}

void WsTunnel::read(Way way) {
  Direction& d = of(way);
  d.reading = true;
  auto done = [self = shared_from_this(), way, generation = m_generation](
                  const ErrorCode& ec, std::size_t n) { self->on_read(way, generation, ec, n); };
  asio::mutable_buffer into(d.buffer.get(), k_read_size);
  if (way == Way::up) {
    read_some(m_client, into, std::move(done)); // relay/socket_read.hpp: no recv bound to fail
  } else {
    m_upstream->read_some(into, std::move(done));
  }
}

void WsTunnel::on_read(Way way, unsigned generation, const ErrorCode& ec, std::size_t n) {
  if (way == Way::down && generation != m_generation) {
    return; // from an upstream a diverted turn left
  }
  of(way).reading = false;
  if (m_phase == Phase::closing) {
    on_lingered(way, ec);
    return;
  }
  if (m_phase == Phase::closed) {
    return;
  }
  if (ec) {
    side_gone(way, ec);
    return;
  }
  m_last_activity = m_mono.now();
  std::string_view data(of(way).buffer.get(), n);
  if (way == Way::up) {
    from_client(data);
  } else {
    from_upstream(data);
  }
}

// The client's bytes go upstream, unless a write there is in progress (a
// re-sent turn) or its turn is moving to another upstream: then they wait.
void WsTunnel::from_client(std::string_view data) {
  if (WsFrameScanner::Result result = m_up.scanner.feed(data); result != WsFrameScanner::Result::ok) {
    end(result == WsFrameScanner::Result::too_big
            ? Ending{fmt::format("a message over {} MiB from the client", k_max_ws_message >> 20), k_too_big,
                     0}
            : Ending{"a malformed frame from the client", k_protocol_error, k_going_away});
    return;
  }
  for (std::string& text : m_up.scanner.take_texts()) {
    if (std::optional<bool> resendable = policy::socket_turn_resendable(text)) {
      m_turn = Turn{true, *resendable, std::move(text)};
    }
  }
  if (m_phase == Phase::diverted || m_up.writing) {
    m_held_up.append(data);
    if (m_held_up.size() > k_max_held_up) {
      end({"the client sent over 1 MiB while its turn moved to another key", k_too_big, 0});
    }
    return;
  }
  write(Way::up, data);
}

void WsTunnel::from_upstream(std::string_view data) {
  WsFrameScanner::Result result = m_down.scanner.feed(data);
  if (result != WsFrameScanner::Result::ok) {
    end(result == WsFrameScanner::Result::too_big
            ? Ending{fmt::format("a message over {} MiB from the upstream", k_max_ws_message >> 20), 0,
                     k_too_big}
            : Ending{"a malformed frame from the upstream", k_internal_error, k_protocol_error});
    return;
  }
  std::vector<std::string> texts = m_down.scanner.take_texts();
  if (m_turn.awaiting_first && m_turn.resendable) {
    hold_turn(data, texts);
    return;
  }
  m_turn.awaiting_first = m_turn.awaiting_first && texts.empty();
  for (const std::string& text : texts) {
    m_events->upstream_text(text);
  }
  write(Way::down, data);
}

// A turn that could be re-sent: its bytes wait until its first event is
// whole, which the owner may divert. Only where nothing of the client's is
// half-way upstream (a frame cut in two, a write in progress) can the turn
// move; else its event is judged and relayed like any other.
bool WsTunnel::hold_turn(std::string_view data, std::vector<std::string>& texts) {
  m_held_down.append(data);
  if (texts.empty()) {
    read(Way::down);
    return true;
  }
  m_turn.awaiting_first = false;
  bool movable = m_up.scanner.at_boundary() && !m_up.writing;
  if (movable && m_events->divert_turn(texts.front())) {
    m_phase = Phase::diverted;
    ++m_generation; // the old upstream's late handlers do nothing
    m_down.reading = false;
    m_upstream->close();
    return true;
  }
  for (std::size_t i = movable ? 1 : 0; i < texts.size(); ++i) {
    m_events->upstream_text(texts[i]);
  }
  m_down.out = std::exchange(m_held_down, {});
  write(Way::down, m_down.out);
  return true;
}

void WsTunnel::reattach(std::shared_ptr<UpstreamConn> upstream, const std::string& from_upstream) {
  if (m_phase != Phase::diverted) {
    upstream->close(); // the client left meanwhile
    return;
  }
  m_phase = Phase::open;
  m_upstream = std::move(upstream);
  ++m_generation;
  ++m_turns_resent;
  m_down.scanner = WsFrameScanner();
  m_down.scanner.capture_texts(k_max_text_read);
  m_held_down.clear();
  m_turn.awaiting_first = true;
  m_up.out = ws_frame(k_opcode_text, m_turn.request, true, ws_random_mask()) + std::exchange(m_held_up, {});
  write(Way::up, m_up.out);
  if (from_upstream.empty()) {
    read(Way::down);
    return;
  }
  this->from_upstream(from_upstream); // held (copied) until the turn's first event
}

void WsTunnel::give_up(const std::string& why) {
  if (m_phase != Phase::diverted) {
    return;
  }
  m_phase = Phase::open;
  m_down.ended = true; // no upstream is left to read
  Ending ending{why, k_internal_error, 0};
  m_down.close_frame = std::exchange(m_held_down, {}); // the turn's event, before the close frame
  end(std::move(ending));
}

void WsTunnel::write(Way way, std::string_view data) {
  of(way).writing = true;
  auto done = [self = shared_from_this(), way, generation = m_generation](
                  const ErrorCode& ec, std::size_t n) { self->on_written(way, generation, ec, n); };
  asio::const_buffer from(data.data(), data.size());
  if (way == Way::down) {
    asio::async_write(m_client, from, std::move(done));
  } else {
    m_upstream->with_stream([&](auto& stream) { asio::async_write(stream, from, std::move(done)); });
  }
}

void WsTunnel::on_written(Way way, unsigned generation, const ErrorCode& ec, std::size_t n) {
  Direction& d = of(way);
  d.writing = false;
  if (way == Way::up && generation != m_generation) {
    return; // to an upstream a diverted turn left: runs before any reattach
  }
  d.bytes += n;
  if (m_phase == Phase::closing) {
    if (d.close == Direction::Close::queued) {
      write_close(way);
    }
    if (!d.reading && !d.ended) {
      read(way); // drain what the source still sends until it hangs up
    }
    return;
  }
  if (m_phase != Phase::open) {
    return;
  }
  if (ec) {
    side_gone(way == Way::up ? Way::down : Way::up, ec); // the receiving side is gone
    return;
  }
  if (way == Way::up && !m_held_up.empty()) {
    d.out = std::exchange(m_held_up, {}); // what the client sent during a re-send
    write(way, d.out);
  } else if (!d.reading) {
    read(way);
  }
}

// The side `way` reads from hung up (or failed). A close frame it sent
// first makes this the end of a clean close; without one, the other side
// hears of it in a close frame of keyshim's own.
void WsTunnel::side_gone(Way way, const ErrorCode& ec) {
  of(way).ended = true;
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
  if (m_phase == Phase::open || m_phase == Phase::diverted) {
    end({why, k_going_away, k_going_away});
  }
}

void WsTunnel::arm_idle() {
  m_alarm.arm(m_last_activity + m_idle_timeout);
}

// Silence in both directions for idle_timeout ends the tunnel; any byte
// either way moves the deadline (checked here, never re-armed per read).
// Once closing, the alarm is the end of the close grace.
void WsTunnel::on_alarm() {
  if (m_phase == Phase::closing) {
    close_both();
    return;
  }
  if (m_phase == Phase::closed) {
    return;
  }
  if (m_mono.now() < m_last_activity + m_idle_timeout) {
    arm_idle();
    return;
  }
  end({fmt::format("idle for {}", util::format_duration(m_idle_timeout)), k_going_away, k_going_away});
}

} // namespace keyshim::relay
