#pragma once
// A WebSocket after its handshake: the client's connection and the
// upstream's, joined. Bytes cross both ways as they arrive and unchanged,
// like nginx's upgraded connections, so text and binary messages,
// fragments, compression, ping/pong and close codes all pass as sent. Each
// direction's frames are followed (WsFrameScanner) only to cap a message's
// size and to place keyshim's own close frame between two frames:
//
//   - a hang-up on one side (no close frame) closes the other, with 1001
//     towards the upstream ("client went away") and 1011 towards the
//     client ("upstream closed the connection");
//   - silence in both directions for idle_timeout closes both with 1001;
//   - shutdown (abort) closes both with 1001 "keyshim is shutting down";
//   - a message over k_max_ws_message closes with 1009.
//
// A close frame is written only where the receiving side is between frames
// (after a write in progress, if any). Then, as RFC 6455 §7.1.1 asks of a
// server, keyshim stops sending and reads on until each side has closed
// (its answering close frame is discarded), for at most 2 s: closing at
// once would make a peer's answering close fail with a reset.
//
// On a Responses WebSocket (read_events()) the owner also sees each text
// message the upstream sends, and a turn (a `response.create` that names no
// earlier response) is held until its first event: when the owner diverts
// that event (a rate limit), the client never sees it; the owner opens
// another upstream and reattach() re-sends the turn there, or give_up()
// relays the held event after all. Event-loop thread only; at most one read
// and one write are pending per direction.
#include "relay/alarm.hpp"
#include "relay/upstream_conn.hpp"
#include "relay/ws_frames.hpp"
#include "util/clock.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {

class WsTunnel : public std::enable_shared_from_this<WsTunnel>, private AlarmOwner {
public:
  struct Summary {
    std::uint64_t bytes_up = 0; // client to upstream
    std::uint64_t bytes_down = 0;
    std::uint64_t messages_up = 0;
    std::uint64_t messages_down = 0;
    int turns_resent = 0;
    std::string end; // how it ended, for the log: "client closed", "idle for 10m", ...
  };

  // What the tunnel tells its owner; none of these may end the tunnel
  // before returning.
  class Events {
  public:
    virtual ~Events() = default;
    // A text message from the upstream, before it is relayed (read_events() only).
    virtual void upstream_text(std::string_view text) = 0;
    // The first event of a turn that could be re-sent elsewhere, instead of
    // upstream_text: true keeps it from the client, and the owner later
    // calls reattach() or give_up().
    virtual bool divert_turn(std::string_view first_event) = 0;
    // Both connections are closed; the last call.
    virtual void tunnel_closed(const Summary& summary) = 0;
  };

  // `mono` and `alarms` are the relay's clock and where its deadlines wait.
  WsTunnel(Socket& client, std::shared_ptr<UpstreamConn> upstream, util::MonoClock& mono, AlarmSource& alarms,
           std::chrono::milliseconds idle_timeout, std::shared_ptr<Events> events);

  // Before start(): read the upstream's events and hold turns (Responses sockets).
  void read_events();
  // Write `head` (the 101) and `from_upstream` (bytes that came with it) to
  // the client and `from_client` (bytes read with the request) upstream,
  // then relay both ways.
  void start(std::string head, std::string from_client, const std::string& from_upstream);
  // Close both sides now with 1001 and `why` as the log's reason.
  void abort(const std::string& why);
  // After a diverted turn: go on with `upstream` (another key's handshake),
  // re-sending the turn first; `from_upstream` came with its 101.
  void reattach(std::shared_ptr<UpstreamConn> upstream, const std::string& from_upstream);
  // After a diverted turn: no other upstream took it. The held event goes
  // to the client, then a close frame 1011 with `why`.
  void give_up(const std::string& why);

private:
  enum class Way { up, down }; // up: client to upstream; down: upstream to client
  struct Direction {
    bool reading = false; // a read from the source side is pending
    bool writing = false; // a write to the other side is pending
    bool ended = false;   // the source side hung up or failed
    std::unique_ptr<char[]> buffer;
    std::string out; // bytes being written when they are not the read buffer's
    WsFrameScanner scanner;
    std::uint64_t bytes = 0;
    // keyshim's own close frame for the receiving side: queued behind a
    // write in progress, then sent.
    enum class Close { none, queued, sent } close = Close::none;
    std::string close_frame;
  };
  // A Responses turn: the client's response.create, until its first event.
  struct Turn {
    bool awaiting_first = false;
    bool resendable = false;
    std::string request; // the message, unmasked
  };
  // How the tunnel ends: the close code each side gets (0: none) and why.
  struct Ending {
    std::string why;
    std::uint16_t to_client = 0;
    std::uint16_t to_upstream = 0;
  };
  enum class Phase { open, diverted, closing, closed };

  Direction& of(Way way) { return way == Way::up ? m_up : m_down; }
  void read(Way way);
  void on_read(Way way, unsigned generation, const ErrorCode& ec, std::size_t n);
  void from_client(std::string_view data);
  void from_upstream(std::string_view data);
  bool hold_turn(std::string_view data, std::vector<std::string>& texts);
  void write(Way way, std::string_view data);
  void on_written(Way way, unsigned generation, const ErrorCode& ec, std::size_t n);
  void side_gone(Way way, const ErrorCode& ec);
  void end(Ending ending);
  void send_close(Way way, std::uint16_t code, const std::string& reason);
  void write_close(Way way);
  void on_close_written();
  void linger();
  void on_lingered(Way way, const ErrorCode& ec);
  void close_both();
  void arm_idle();
  // Open: the idle deadline may have passed. Closing: the grace is over.
  void on_alarm() override;
  std::shared_ptr<void> alarm_keepalive() override { return shared_from_this(); }

  Socket& m_client;
  std::shared_ptr<UpstreamConn> m_upstream;
  unsigned m_generation = 0; // of m_upstream: a replaced upstream's handlers do nothing
  util::MonoClock& m_mono;
  std::chrono::milliseconds m_idle_timeout;
  std::shared_ptr<Events> m_events; // null once closed
  bool m_read_events = false;
  Phase m_phase = Phase::open;
  Direction m_up;
  Direction m_down;
  Turn m_turn;
  std::string m_held_down;  // a held turn's first bytes from the upstream
  std::string m_held_up;    // what the client sent while its turn was diverted
  int m_closes_pending = 0; // close frames queued or being written
  int m_turns_resent = 0;
  std::string m_why;
  Alarm m_alarm;
  MonoTime m_last_activity{};
};

} // namespace keyshim::relay
