#pragma once
// One attempt with one key: take an idle pooled connection or connect, send
// the request, read the response head (skipping interim 1xx ones), then the
// body piece by piece as its exchange asks. The attempt reports what
// happens through AttemptEvents and decides nothing about keys; deadlines
// are the exchange's. Event-loop thread only.
//
// One guard rule for every handler: it acts only while the attempt is
// current, i.e. its generation is the attempt's and the exchange has not
// abandoned it. A stale pooled connection replaced by a fresh one starts a
// new generation, so the old connection's late handlers do nothing.
#include "config/config.hpp"
#include "policy/failure_policy.hpp"
#include "relay/beast.hpp"
#include "relay/upstream_conn.hpp"
#include "util/clock.hpp"
#include "util/recycling_allocator.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace keyshim::relay {

class AttemptEvents {
public:
  virtual ~AttemptEvents() = default;
  // A fresh connection is being made (connect_timeout applies).
  virtual void attempt_connecting() = 0;
  // The request is being sent (first_byte_timeout applies).
  virtual void attempt_sending() = 0;
  // The final response head arrived: head() is readable.
  virtual void attempt_head() = 0;
  // Body bytes (`piece` may be empty when `done`); ask for more with read_body().
  virtual void attempt_body(std::string_view piece, bool done) = 0;
  // Reading the body failed; `piece` holds what arrived with the failure.
  virtual void attempt_body_failed(std::string_view piece, const std::string& error) = 0;
  // No response: the connection, TLS, the send or the head failed.
  virtual void attempt_failed(policy::TransportFailure failure, const std::string& detail) = 0;
};

// A pooled connection the upstream closed while it sat idle fails at once:
// the write fails, or the end of the stream (FIN or RST) arrives before any
// byte of a response within one round trip. Only a failure of that kind,
// within this long of the send, earns the one free retry on a fresh
// connection. Anything slower (an upstream that held the request and then
// reset) had the request and is a counted attempt: a free retry there would
// repeat the wait without bound or count.
inline constexpr std::chrono::milliseconds k_stale_window{1000};

// How many parsed elements (chunk headers, chunk bodies) one piece may take
// from bytes already read: a bound on one handler's work, never reached by a
// piece that fills up first (64 KiB of 1-byte chunks is 128 Ki elements).
inline constexpr int k_max_parsed_elements = 4096;

// What one attempt sends, and to where.
struct AttemptRequest {
  std::string head;                       // the upstream request head, key included
  const std::string* body;                // the client's body, alive as long as the exchange
  bool head_method;                       // a HEAD request: the response has no body
  std::shared_ptr<const TlsContexts> tls; // the state's, for a fresh https connection
  const std::string* origin;              // UpstreamPool::origin_of the key, alive with the state
};

// One attempt as its exchange drives it: an UpstreamAttempt, or a test's
// fake, which reports through the same AttemptEvents.
class Attempt {
public:
  virtual ~Attempt() = default;
  // Begin: an idle pooled connection at `now` if one looks alive, else a fresh one.
  virtual void start(MonoTime now) = 0;
  // Read the next body piece (after attempt_head or attempt_body).
  virtual void read_body() = 0;
  // The exchange moved on (deadline, hang-up, verdict): close, report nothing more.
  virtual void abandon() = 0;
  // The response was read as far as the exchange wants it: keep the
  // connection for the next request when it ended cleanly, else close it.
  virtual void finish(MonoTime now) = 0;
  // After a 101: the connection is the tunnel's now, with the bytes read
  // past the response head still in its buffer. The attempt reports nothing more.
  virtual std::shared_ptr<UpstreamConn> hand_over() = 0;
  // After attempt_head: the parser that read the response head.
  virtual const ResponseParser& parser() const = 0;
  const ResponseHead& head() const { return parser().get(); }
};

// Where an exchange gets its attempts (RelayContext::attempts).
class AttemptSource {
public:
  virtual ~AttemptSource() = default;
  // An attempt to send `request` with `key`, reporting to `events`; body
  // pieces land in `pieces` (`piece_size` bytes). Nothing happens before start().
  virtual std::shared_ptr<Attempt> make(const config::KeyConfig& key, AttemptRequest request, char* pieces,
                                        std::size_t piece_size, std::shared_ptr<AttemptEvents> events) = 0;
};

class UpstreamAttempt final : public Attempt, public std::enable_shared_from_this<UpstreamAttempt> {
public:
  using Request = AttemptRequest;
  // `pieces` is k_piece_size bytes where body pieces land; `mono` times how
  // fast a pooled connection failed (see k_stale_window).
  UpstreamAttempt(UpstreamPool& upstreams, const config::KeyConfig& key, Request request, char* pieces,
                  std::size_t piece_size, std::shared_ptr<AttemptEvents> events, const util::MonoClock& mono);

  void start(MonoTime now) override;
  void read_body() override;
  void abandon() override;
  void finish(MonoTime now) override;
  std::shared_ptr<UpstreamConn> hand_over() override;
  const ResponseParser& parser() const override { return *m_parser; }

private:
  // The exchange to report to, held for the handler's whole run (a report
  // may end the exchange), or null when the handler is stale.
  std::shared_ptr<AttemptEvents> current(unsigned generation) const {
    return generation == m_generation ? m_events : nullptr;
  }
  void connect_fresh();
  void on_connected(unsigned generation, ConnectFailure failure, const std::string& detail);
  void send();
  void on_sent(unsigned generation, const ErrorCode& ec);
  void new_parser();
  void read_head();
  // One read of the connection into its buffer; `on_bytes` is handed what came.
  using BytesHandler = void (UpstreamAttempt::*)(unsigned generation, const ErrorCode& error,
                                                 std::size_t bytes);
  void read_bytes(BytesHandler on_bytes);
  void on_head_bytes(unsigned generation, const ErrorCode& error, std::size_t bytes);
  // Parse the buffered bytes as the head: need_more while it is incomplete.
  ErrorCode parse_head();
  void on_head(unsigned generation, const ErrorCode& ec);
  void on_read(unsigned generation, const ErrorCode& error, std::size_t bytes);
  void read_failed(ErrorCode error, AttemptEvents& events);
  void hand_over_parsed(std::size_t n, const ErrorCode& parse_error, AttemptEvents& events);
  void deliver(std::size_t n, AttemptEvents& events);
  // Parse body bytes already read into the piece, without a read: the bytes
  // added, and a parse error met after them in `error`.
  std::size_t parse_buffered(ErrorCode& error);
  // Whether a failure of the write (`writing`) or of reading the response
  // head looks like a pooled connection the upstream had closed while idle.
  bool looks_stale(const ErrorCode& ec, bool writing) const;
  // Report the failure; `stale` instead retries once on a fresh connection.
  void fail(policy::TransportFailure failure, const std::string& detail, bool stale = false);
  void close();

  UpstreamPool& m_upstreams;
  const config::KeyConfig& m_key;
  Request m_request;
  char* m_pieces;
  std::size_t m_piece_size;
  // The exchange, kept alive while the attempt may still report to it; null
  // once abandoned or finished, which every phase change does first.
  std::shared_ptr<AttemptEvents> m_events;
  std::shared_ptr<UpstreamConn> m_conn;
  std::shared_ptr<ResponseParser> m_parser; // shared with its pending read, like the connection
  const util::MonoClock& m_mono;
  bool m_reused = false; // a pooled connection: a stale one earns one fresh retry
  MonoTime m_sent{};     // when the request began to go out
  int m_interim = 0;     // 1xx responses skipped
  unsigned m_generation = 0;
};

// The real source: UpstreamAttempts over the pooled upstream connections.
class PooledAttempts final : public AttemptSource {
public:
  // `mono` times how fast a pooled connection failed (see k_stale_window).
  PooledAttempts(UpstreamPool& upstreams, const util::MonoClock& mono)
      : m_upstreams(upstreams), m_mono(mono) {}
  std::shared_ptr<Attempt> make(const config::KeyConfig& key, AttemptRequest request, char* pieces,
                                std::size_t piece_size, std::shared_ptr<AttemptEvents> events) override {
    return std::allocate_shared<UpstreamAttempt>(util::RecyclingAllocator<UpstreamAttempt>(), m_upstreams,
                                                 key, std::move(request), pieces, piece_size,
                                                 std::move(events), m_mono);
  }

private:
  UpstreamPool& m_upstreams;
  const util::MonoClock& m_mono;
};

} // namespace keyshim::relay
