#pragma once
// One relayed request, from the moment its head and body are read until its
// response has been written: the attempt loop. Its state is one variant;
// each phase carries its own data:
//
//   Choosing -> Trying (connecting, sending, head, error body | probe | first body)
//     -> Trying again with another key, or Waiting for one, or
//     -> Streaming (committed: the client has bytes) -> Done
//   Choosing -> Answering (503, 502, a relayed error) -> Done
//   Trying (a WebSocket handshake answered 101) -> Tunnelling -> Done
//
// The pieces it drives have rooms of their own: AttemptPlan (which key
// next, pure), KeyLease (the key held), an Attempt from RelayContext's
// AttemptSource (one attempt's connection: an UpstreamAttempt, or a test's
// fake), ClientStream (writing to the client). Client hang-up, the
// deadline alarm and shutdown are events on this state, never polls; the
// alarm reads RelayContext's clock through its AlarmSource, so a test moves
// a request through its deadlines on a fake clock.
// Everything runs on the event loop's thread; nothing here blocks.
#include "policy/failure_policy.hpp"
#include "policy/usage_meter.hpp"
#include "relay/alarm.hpp"
#include "relay/attempt_plan.hpp"
#include "relay/beast.hpp"
#include "relay/capture_draft.hpp"
#include "relay/client_stream.hpp"
#include "relay/key_lease.hpp"
#include "relay/pool_state.hpp"
#include "relay/request_log.hpp"
#include "relay/response_probe.hpp"
#include "relay/upstream_attempt.hpp"
#include "relay/upstream_conn.hpp"
#include "relay/wait_room.hpp"
#include "relay/watchdog.hpp"
#include "relay/ws_tunnel.hpp"
#include "util/clock.hpp"
#include "util/recycling_allocator.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace keyshim::relay {

// The size of one relayed piece: the most read from the upstream at once.
constexpr std::size_t k_piece_size = 64 * 1024;

// When the hang-up watch starts: most exchanges are over before, and a
// watch costs a system call and two turns of the event loop. A client that
// hangs up while its request runs longer stops it this much later at most.
constexpr std::chrono::milliseconds k_client_watch_delay{50};

// The client connection, as a relayed request needs it.
class Downstream {
public:
  virtual ~Downstream() = default;
  virtual Socket& socket() = 0;

  // What the connection does once an exchange is over.
  enum class Next {
    request, // read the next request (keep-alive)
    close,   // the answer is complete but the connection ends: close gently
    drop,    // the client left, or its answer was cut: close now, nothing to linger for
  };
  virtual void exchange_finished(Next next) = 0;
  // The bytes read past the request (a WebSocket's first frames, sent
  // before its 101 arrived), taken from the connection's buffer.
  virtual std::string take_read_ahead() = 0;

  // k_piece_size bytes where response pieces land on their way to this
  // client. Kept across its requests (one exchange at a time uses it): a
  // buffer per exchange cost malloc a heap trim (brk) every few requests.
  // A new connection takes the block a closed one left, if one waits: 64
  // KiB from malloc and back cost about 340 instructions a connection.
  char* piece_buffer() {
    if (!m_piece) {
      m_piece.reset(PieceAllocator().allocate(1)); // not zero-filled: pages are touched only as data lands
    }
    return m_piece->data();
  }

  // The key (pool::KeyPool::key_id) the connection's last request took: a
  // tool that names no session is its connection (docs/behaviour.md §4).
  std::uint64_t last_key() const { return m_last_key; }
  void remember_key(std::uint64_t key_id) { m_last_key = key_id; }

private:
  using Piece = std::array<char, k_piece_size>;
  using PieceAllocator = util::RecyclingAllocator<Piece, 8>; // at most 512 KiB wait per thread
  struct PieceRelease {
    void operator()(Piece* piece) const noexcept { PieceAllocator().deallocate(piece, 1); }
  };
  std::unique_ptr<Piece, PieceRelease> m_piece;
  std::uint64_t m_last_key = 0;
};

// "connect error" / "connect" (chain) for a transport failure.
const char* failure_word(policy::TransportFailure failure, bool chain);

// What every exchange shares. Time is one input: every deadline, wait,
// Retry-After and cooldown the relay computes reads these two clocks.
// Event-loop thread only.
struct RelayContext {
  AttemptSource& attempts; // each attempt's upstream connection (PooledAttempts)
  util::MonoClock& mono;   // deadlines and waits
  util::Clock& wall;       // cooldowns and Retry-After, which providers give as dates
  AlarmSource& alarms;     // where deadlines wait for `mono` to pass them (the loop's LoopAlarms)
  WaitRoom& waits;
  const StateSource& states; // the newest pool file, for requests that waited
  TokenRefresh& tokens;      // runs key_cmd commands for new tokens, off the loop
  CaptureRing& captures;     // the newest exchanges, for /captures
};

class Exchange : public std::enable_shared_from_this<Exchange>,
                 public Waiter,
                 public AttemptEvents,
                 public WsTunnel::Events,
                 public AlarmOwner {
public:
  // Relay `request` to the pool `route` names, with the route's target.
  // `keep_alive`: the client's connection may serve another request after
  // this one (as the parser read its Connection field: Beast's
  // message::keep_alive() searches the fields again, about 650 instructions
  // when the field is there).
  Exchange(std::shared_ptr<const PoolState> state, const Route& route, ClientRequest request, bool keep_alive,
           std::shared_ptr<Downstream> client, RelayContext& context);

  // Begin: choose a key and make the first attempt (or answer at once).
  void start();
  // keyshim is shutting down and the drain ran out: end now.
  void abort(const std::string& why);

  // ---- Waiter: waiting for a key (exchange_wait.cpp)
  bool retry() override;
  void shutting_down() override;

  // ---- AttemptEvents: what the current attempt reports (exchange_body.cpp)
  void attempt_connecting() override;
  void attempt_sending() override;
  void attempt_head() override;
  void attempt_body(std::string_view piece, bool done) override;
  void attempt_body_failed(std::string_view piece, const std::string& error) override;
  void attempt_failed(policy::TransportFailure failure, const std::string& detail) override;

  // ---- WsTunnel::Events: an open WebSocket (exchange_tunnel.cpp)
  void upstream_text(std::string_view text) override;
  bool divert_turn(std::string_view first_event) override;
  void tunnel_closed(const WsTunnel::Summary& summary) override;

  // ---- AlarmOwner: the deadline (exchange_events.cpp)
  void on_alarm() override;
  std::shared_ptr<void> alarm_keepalive() override { return shared_from_this(); }

private:
  // ---- the phases and their data
  struct Choosing {};
  struct Waiting {};
  // An attempt before the commit point. What it reads decides: an error
  // body is kept to classify; a 200 event stream is held until its first
  // event is checked; any other success commits on its first body bytes.
  struct Trying {
    enum class Step { connecting, sending, head, error_body, probe, first_body };
    std::shared_ptr<Attempt> upstream;
    std::size_t key = 0;
    std::uint64_t token = 0; // the generation of the key_cmd token it sends (pool::SecretInUse)
    Step step = Step::connecting;
    ResponseProbe probe; // error_body and probe: what was read to judge
  };
  // Committed: the client has (or is getting) bytes of this key's response.
  struct Streaming {
    std::shared_ptr<Attempt> upstream;
    std::size_t key = 0;
    policy::UsageMeter usage; // the tokens the response reports
    std::string held;         // a probed start, written as the first piece
  };
  // A WebSocket: the upstream's 101 went to the client and the two
  // connections are joined until either side ends.
  struct Tunnelling {
    std::shared_ptr<WsTunnel> tunnel;
    std::size_t key = 0;
  };
  struct Answering {};
  struct Done {};
  using Phase = std::variant<Choosing, Waiting, Trying, Streaming, Tunnelling, Answering, Done>;

  template <class P> bool in() const { return std::holds_alternative<P>(m_phase); }
  Trying* trying() { return std::get_if<Trying>(&m_phase); }

  // ---- choosing a key and attempting (exchange.cpp)
  void choose_key();
  void choose_pinned();
  void attempt(pool::Selection selection);
  void fail_attempt(policy::TransportFailure failure, const std::string& detail);
  policy::Verdict verdict_for(std::size_t key, const policy::Outcome& outcome) const;
  void act(std::size_t key, const policy::Outcome& outcome, const policy::Verdict& verdict,
           std::string_view relay_body);
  void apply_health(std::size_t key, const policy::Outcome& outcome, const policy::Verdict& verdict);
  bool renews_token(std::size_t key, const policy::Outcome& outcome, const policy::Verdict& verdict);
  const std::string* model() const { return m_model ? &*m_model : nullptr; }
  pool::Affinity affinity() const;

  // ---- waiting for a key (exchange_wait.cpp)
  bool start_waiting(const pool::Selection& selection);
  bool wait_for_token();
  bool cooling_for_request(std::size_t index) const;
  void stop_waiting();
  void on_wait_deadline();
  void rearm_wait();
  bool take_newest_state();
  void serve_from(std::shared_ptr<const PoolState> state, const Route& route);

  // ---- the response body before and at the commit point (exchange_body.cpp)
  void take_error_piece(std::string_view piece, bool done);
  void take_probe_piece(std::string_view piece, bool done);
  policy::Outcome outcome_of(const Trying& trying, int status, std::string body) const;
  // The commit point, with `first` (a piece) or the `held` start of a stream.
  void commit(std::string_view first, bool done, std::string held = {});

  // ---- a WebSocket after its 101 (exchange_tunnel.cpp)
  void open_tunnel();
  void reopen();
  void give_up_turn();

  // ---- writing to the client and the end (exchange_write.cpp)
  void write_piece(std::string_view data, bool last);
  void on_piece_written(const ErrorCode& ec, std::size_t bytes, bool last);
  void stream_failed(const std::string& why);
  void answer(const Answer& answer, bool close = false);
  void on_answer_written(const ErrorCode& ec, bool close);
  void count_usage(Streaming& streaming);
  void finish(Downstream::Next next);

  // ---- request capture, when the pool's `capture` is not off (exchange_capture.cpp)
  void start_capture();
  void capture_step(std::size_t key, int status, const policy::Verdict* verdict);
  void capture_response_head(const ResponseHead& head);
  void keep_capture();

  // ---- deadlines, the client, cancellation (exchange_events.cpp)
  Watchdog::Kind deadline_kind() const;
  void arm_deadline(milliseconds limit);
  void on_deadline();
  void arm_alarm(); // for the watchdog's deadline, and for the hang-up watch's start
  void watch_client();
  void end_client_watch();
  void on_client_readable(const ErrorCode& ec, std::size_t n);
  void cancel(const std::string& why);
  // Leave the current phase's upstream attempt, if any: it reports nothing more.
  void drop_upstream();

  // The pool file and the pool the request is served from: the state current
  // when its head was read, or a newer one once it waited (take_newest_state).
  std::shared_ptr<const PoolState> m_state;
  const ServedPool* m_served = nullptr;
  const config::UpstreamSettings* m_settings = nullptr;
  pool::KeyPool* m_pool = nullptr;
  ClientRequest m_request;
  bool m_keep_alive;                  // the client may send another request on its connection
  std::optional<std::string> m_model; // the model the request asks for, if it names one
  std::uint64_t m_session = 0;        // the tool session it names (policy::request_session), 0: none
  // keyshim-key: the one key that serves it, no failover (docs/behaviour.md §4.2).
  std::optional<std::size_t> m_pinned;
  std::optional<Answer> m_refusal; // a malformed keyshim-replay or keyshim-key: the 400
  std::shared_ptr<Downstream> m_client;
  RelayContext& m_context;
  MonoTime m_started;
  // The hang-up watch: a peeking receive on the client socket, pending while
  // `on`; `later` until k_client_watch_delay into the exchange.
  enum class ClientWatch { later, on, off };
  ClientWatch m_client_watch = ClientWatch::later;
  char m_peeked = 0; // where it peeks

  Phase m_phase = Choosing{};
  // A Responses turn moving to another key: the open tunnel waits in here
  // while the phases run another handshake (Choosing, Trying), whose 101
  // reattaches it instead of opening a new one.
  struct Reopening {
    std::shared_ptr<WsTunnel> tunnel;
    std::size_t key = 0; // the key whose socket the tunnel left
  };
  std::optional<Reopening> m_reopening;
  WaitRoom::Place m_place; // where it waits for a key; kept, so its age counts when it waits again
  bool m_in_room = false;  // m_place is in the wait room
  AttemptPlan m_plan;
  // The rate limits the current attempt's response head reported, until its
  // report takes them. A member, not Trying's: each attempt would zero it.
  std::optional<pool::QuotaReport> m_quota;
  KeyLease m_lease; // declared after m_model, which its probe points at
  ClientStream m_out;
  Alarm m_timer; // for m_watchdog.due()
  Watchdog m_watchdog;
  RequestRecord m_record;
  std::optional<CaptureDraft> m_capture; // none when the pool captures nothing; in place, no block of its own
};

} // namespace keyshim::relay
