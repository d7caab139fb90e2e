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
// (after a write in progress, if any). Then, as RFC 6455 §7.1.1 asks of a server, keyshim
// stops sending and reads on until each side has closed (its answering
// close frame is discarded), for at most k_close_grace: closing at once
// would make a peer's answering close fail with a reset. Event-loop thread
// only; one read and one write at most are pending per side.
#include "relay/deadline_timer.hpp"
#include "relay/upstream_conn.hpp"
#include "relay/ws_frames.hpp"
#include "util/clock.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace keyshim::relay {

class WsTunnel : public std::enable_shared_from_this<WsTunnel> {
public:
  struct Summary {
    std::uint64_t bytes_up = 0; // client to upstream
    std::uint64_t bytes_down = 0;
    std::uint64_t messages_up = 0;
    std::uint64_t messages_down = 0;
    std::string end; // how it ended, for the log: "client closed", "idle for 10m", ...
  };
  using Closed = std::function<void(const Summary&)>;

  // `closed` runs once, when both connections are closed.
  WsTunnel(Socket& client, std::shared_ptr<UpstreamConn> upstream, util::MonoClock& mono,
           std::chrono::milliseconds idle_timeout, Closed closed);

  // Write `head` (the 101) and `from_upstream` (bytes that came with it) to
  // the client and `from_client` (bytes read with the request) upstream,
  // then relay both ways.
  void start(std::string head, std::string from_client, std::string from_upstream);
  // Close both sides now with 1001 and `why` as the log's reason.
  void abort(const std::string& why);
  // Before start(): `on_text` gets a copy of each plain text message from
  // the upstream (up to 1 MiB) before it is relayed.
  using Texts = std::function<void(std::string_view)>;
  void read_texts(Texts on_text);

private:
  enum class Way { up, down }; // up: client to upstream; down: upstream to client
  enum class Step {
    idle,    // nothing pending
    reading, // a read from the source side is pending
    writing, // a write to the other side is pending
    ended,   // the source side hung up or failed
  };
  struct Direction {
    Step step = Step::idle;
    std::unique_ptr<char[]> buffer;
    std::string first; // bytes to write before the first read
    WsFrameScanner scanner;
    std::uint64_t bytes = 0;
    // keyshim's own close frame for the receiving side: queued behind a
    // write in progress, then sent.
    enum class Close { none, queued, sent } close = Close::none;
    std::string close_frame;
  };
  // How the tunnel ends: the close code each side gets (0: none) and why.
  struct Ending {
    std::string why;
    std::uint16_t to_client = 0;
    std::uint16_t to_upstream = 0;
  };
  enum class Phase { open, closing, closed };

  Direction& of(Way way) { return way == Way::up ? m_up : m_down; }
  void read(Way way);
  void on_read(Way way, const ErrorCode& ec, std::size_t n);
  void write(Way way, std::string_view data);
  void on_written(Way way, const ErrorCode& ec, std::size_t n);
  void side_gone(Way way, const ErrorCode& ec);
  void end(Ending ending);
  void send_close(Way way, std::uint16_t code, const std::string& reason);
  void write_close(Way way);
  void on_close_written();
  void linger();
  void on_lingered(Way way, const ErrorCode& ec);
  void close_both();
  void pass_texts();
  void arm_idle();
  void on_timer();

  Socket& m_client;
  std::shared_ptr<UpstreamConn> m_upstream;
  util::MonoClock& m_mono;
  std::chrono::milliseconds m_idle_timeout;
  Closed m_closed;
  Texts m_on_text;
  Phase m_phase = Phase::open;
  Direction m_up;
  Direction m_down;
  int m_closes_pending = 0; // close frames queued or being written
  std::string m_why;
  DeadlineTimer m_timer;
  std::chrono::steady_clock::time_point m_last_activity{};
};

} // namespace keyshim::relay
