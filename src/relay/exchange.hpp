#pragma once
// One relayed request, from the moment its head and body are read until its
// response has been written, as one object with one explicit state:
//
//   choosing -> connecting -> sending -> awaiting_head
//     -> reading_error (classify; next key, or relay the error)
//     -> probing       (a 200 event stream: hold the first event, check it)
//     -> awaiting_body (other 2xx/3xx: wait for the first body bytes)
//   -> streaming (committed: the client has bytes) -> done
//   choosing -> answering (503, 502, a relayed error) -> done
//
// Each asynchronous step is a named handler. Client hang-up, the deadline
// timer and shutdown are events on this state, never polls. Everything runs
// on the event loop's thread; nothing here blocks.
#include "policy/failure_policy.hpp"
#include "policy/stream_decoder.hpp"
#include "policy/usage_meter.hpp"
#include "relay/answers.hpp"
#include "relay/beast.hpp"
#include "relay/deadline_timer.hpp"
#include "relay/header_rules.hpp"
#include "relay/pool_state.hpp"
#include "relay/request_log.hpp"
#include "relay/upstream_conn.hpp"
#include "relay/wait_room.hpp"
#include "relay/watchdog.hpp"
#include "util/clock.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::relay {

// The size of one relayed piece: the most read from the upstream at once.
constexpr std::size_t k_piece_size = 64 * 1024;

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

  // k_piece_size bytes where response pieces land on their way to this
  // client. Kept across its requests (one exchange at a time uses it): a
  // buffer per exchange cost malloc a heap trim (brk) every few requests.
  char* piece_buffer() {
    if (!m_piece) {
      m_piece.reset(new char[k_piece_size]); // not zero-filled: pages are touched only as data lands
    }
    return m_piece.get();
  }

private:
  std::unique_ptr<char[]> m_piece;
};

// "connect error" / "connect" (chain) for a transport failure.
const char* failure_word(policy::TransportFailure failure, bool chain);

// What every exchange shares. Event-loop thread only.
struct RelayContext {
  UpstreamPool& upstreams;
  util::MonoClock& clock;
  WaitRoom& waits;
};

class Exchange : public std::enable_shared_from_this<Exchange>, public Waiter {
public:
  // Relay `request` to the pool `route` names, with the route's target.
  Exchange(std::shared_ptr<const PoolState> state, const Route& route, ClientRequest request,
           std::shared_ptr<Downstream> client, RelayContext& context);

  // Begin: choose a key and make the first attempt (or answer at once).
  void start();
  // keyshim is shutting down and the drain ran out: end now.
  void abort(const std::string& why);

  // ---- Waiter: waiting for a key (exchange_wait.cpp)
  bool retry() override;
  void shutting_down() override;

private:
  enum class Phase {
    choosing,
    waiting,
    connecting,
    sending,
    awaiting_head,
    reading_error,
    probing,
    awaiting_body,
    streaming,
    answering,
    done
  };

  // What one attempt holds; replaced whole by the next attempt.
  struct Attempt {
    std::size_t index = 0;
    std::shared_ptr<UpstreamConn> conn;
    bool reused = false;                    // an idle pooled connection: a stale one earns one fresh retry
    int interim = 0;                        // 1xx responses skipped
    std::shared_ptr<ResponseParser> parser; // shared with its pending read, like the connection
    std::string held;                       // the probed start of a stream, or an error body
    std::string decoded;                    // the same, decompressed, for the checks
    std::unique_ptr<policy::StreamDecoder> decoder;
    MonoTime started{};
  };

  // ---- choosing a key and attempting (exchange.cpp)
  void choose_key();
  void attempt(std::size_t index);
  void connect_fresh();
  void on_connected(unsigned generation, ConnectFailure failure, const std::string& detail);
  void send_request();
  void on_request_sent(unsigned generation, const ErrorCode& ec);
  void read_head();
  void on_head(unsigned generation, const ErrorCode& ec);
  void on_response_head();
  void fail_attempt(policy::TransportFailure failure, const std::string& detail);
  policy::Verdict verdict_for(const policy::Outcome& outcome) const;
  void act(const policy::Outcome& outcome, const policy::Verdict& verdict, std::string_view relay_body);
  void apply_health(const policy::Outcome& outcome, const policy::Verdict& verdict);
  void give_up();

  // ---- waiting for a key (exchange_wait.cpp)
  bool start_waiting(const pool::Selection& selection);
  // Whether key `index` is cooling for every model or for this request's.
  bool cooling_for_request(std::size_t index) const;
  void stop_waiting();
  void on_wait_deadline();
  milliseconds waited() const;
  void release_key();

  // ---- the response body (exchange_body.cpp)
  void read_piece();
  void on_piece(unsigned generation, const ErrorCode& error);
  void take_error_piece(std::string_view piece, bool done);
  void take_probe_piece(std::string_view piece, bool done);
  void commit(std::string_view first, bool done);
  void write_piece(std::string_view data, bool last);
  void on_piece_written(const ErrorCode& ec, std::size_t bytes, bool last);
  void stream_failed(const std::string& why);
  void answer(const Answer& answer);
  void on_answer_written(const ErrorCode& ec, bool close);
  void count_usage();
  const std::string* model() const { return m_model ? &*m_model : nullptr; }
  void finish(Downstream::Next next);

  // ---- deadlines, the client, cancellation (exchange_events.cpp)
  void arm_deadline(Watchdog::Kind kind, milliseconds limit);
  void on_timer();
  void on_deadline();
  void watch_client();
  void on_client_readable(const ErrorCode& ec);
  void cancel(const std::string& why);
  void drop_connection();

  std::shared_ptr<const PoolState> m_state;
  const ServedPool& m_served;
  const config::UpstreamSettings& m_settings;
  pool::KeyPool& m_pool;
  ClientRequest m_request;
  std::shared_ptr<Downstream> m_client;
  RelayContext& m_context;
  Phase m_phase = Phase::choosing;
  MonoTime m_started;
  bool m_client_keep_alive = true;
  bool m_watching_client = false;

  // Across attempts.
  std::vector<bool> m_excluded;
  std::vector<bool> m_retried;
  std::optional<std::size_t> m_same_key; // the next attempt repeats this key
  std::optional<Answer> m_last_error;
  std::vector<std::string> m_tried; // "label: what happened", for the 502
  int m_attempts = 0;
  std::optional<std::size_t> m_holding_key; // acquired from the pool, not yet released
  std::optional<MonoTime> m_wait_since;     // when the request first waited: max_wait runs from then
  bool m_holding_probe = false;             // the held key probes m_model after its cooldown
  std::optional<std::string> m_model;       // the model the request asks for, if it names one

  // The current attempt; upstream handlers from an older one see a different
  // generation and do nothing.
  Attempt m_attempt;
  unsigned m_generation = 0;
  std::string m_request_head;

  // Writing to the client.
  std::string m_prefix; // response head and/or chunk size line
  std::string m_suffix; // chunk end and/or last-chunk
  std::string m_answer_bytes;
  bool m_head_sent = false;
  bool m_close_after = false;
  Framing m_framing = Framing::chunked;
  std::optional<policy::UsageMeter> m_usage; // from the commit point: the tokens the response reports

  DeadlineTimer m_timer;
  Watchdog m_watchdog;
  RequestRecord m_record;
};

} // namespace keyshim::relay
