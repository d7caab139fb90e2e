#include "relay/upstream_attempt.hpp"

#include "util/clock.hpp"
#include "util/log.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/read_size.hpp>

#include <array>
#include <limits>

namespace keyshim::relay {
namespace {

// Interim responses (103 Early Hints) skipped before the real one.
constexpr int k_max_interim_responses = 8;
// A longer response head is a failed attempt, not memory.
constexpr std::uint32_t k_max_response_head = 64 * 1024;

} // namespace

UpstreamAttempt::UpstreamAttempt(UpstreamPool& upstreams, const config::KeyConfig& key, Request request,
                                 char* pieces, std::size_t piece_size, std::shared_ptr<AttemptEvents> events,
                                 const util::MonoClock& mono)
    : m_upstreams(upstreams), m_key(key), m_request(std::move(request)), m_pieces(pieces),
      m_piece_size(piece_size), m_events(std::move(events)), m_mono(mono) {
}

void UpstreamAttempt::start(MonoTime now) {
  m_conn = m_upstreams.take_idle(*m_request.origin, now);
  if (m_conn) {
    m_reused = true;
    send();
    return;
  }
  connect_fresh();
}

void UpstreamAttempt::connect_fresh() {
  std::string error;
  m_reused = false;
  m_conn = m_upstreams.make(m_key, *m_request.origin, m_request.tls.get(), error);
  if (!m_conn) {
    fail(policy::TransportFailure::tls, error);
    return;
  }
  m_events->attempt_connecting();
  m_conn->connect(m_key.base_url, [self = shared_from_this(), generation = m_generation](
                                      ConnectFailure failure, const std::string& detail) {
    self->on_connected(generation, failure, detail);
  });
}

void UpstreamAttempt::on_connected(unsigned generation, ConnectFailure failure, const std::string& detail) {
  util::ClockTurn turn; // the time is read once in this handler
  std::shared_ptr<AttemptEvents> events = current(generation);
  if (!events) {
    return;
  }
  if (failure != ConnectFailure::none) {
    fail(failure == ConnectFailure::tls ? policy::TransportFailure::tls : policy::TransportFailure::connect,
         detail);
    return;
  }
  send();
}

// The socket usually takes the whole request at once, and then the head is
// read at once too: a write's completion would come through the loop, one
// more epoll_wait per request. The rest, or a failure, is reported from the
// loop as before. (The previous answer's last read left the socket empty,
// so that read of the head waits for the loop without a recv first.)
void UpstreamAttempt::send() {
  m_sent = m_mono.now();
  m_events->attempt_sending();
  std::array<asio::const_buffer, 2> buffers = {asio::buffer(m_request.head), asio::buffer(*m_request.body)};
  ErrorCode error;
  std::size_t sent = m_conn->write_now(buffers, error);
  if (!error && sent == asio::buffer_size(buffers)) {
    read_head();
    return;
  }
  auto done = [self = shared_from_this(), conn = m_conn, generation = m_generation](
                  const ErrorCode& ec, std::size_t) { self->on_sent(generation, ec); };
  if (error) {
    asio::post(m_conn->socket().get_executor(),
               [done = std::move(done), error]() mutable { done(error, 0); });
    return;
  }
  beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(buffers);
  rest.consume(sent);
  m_conn->with_stream([&](auto& stream) { asio::async_write(stream, rest, std::move(done)); });
}

void UpstreamAttempt::on_sent(unsigned generation, const ErrorCode& ec) {
  util::ClockTurn turn; // the time is read once in this handler
  std::shared_ptr<AttemptEvents> events = current(generation);
  if (!events) {
    return;
  }
  if (ec) {
    fail(policy::TransportFailure::closed_before_response, ec.message(), looks_stale(ec, true));
    return;
  }
  read_head();
}

void UpstreamAttempt::new_parser() {
  // Made and dropped once per response, like the attempt: its block is kept for the next one.
  m_parser = std::allocate_shared<ResponseParser>(util::RecyclingAllocator<ResponseParser>());
  m_parser->header_limit(k_max_response_head);
  m_parser->body_limit(std::numeric_limits<std::uint64_t>::max()); // never boost::none (Beast 1.74 bug)
  if (m_request.head_method) {
    m_parser->skip(true);
  }
}

// The head is read as Beast's http::async_read_header reads it (the bytes
// already buffered first, a result always from the loop), but through
// UpstreamConn::read_some: right after the request went, the answer is not
// there yet, and a plain connection then waits for it without a recv that
// must fail.
void UpstreamAttempt::read_head() {
  new_parser();
  ErrorCode ec = parse_head(); // an interim response's successor may be buffered
  if (ec == http::error::need_more) {
    read_bytes(&UpstreamAttempt::on_head_bytes);
    return;
  }
  asio::post(m_conn->socket().get_executor(),
             [self = shared_from_this(), generation = m_generation, ec] { self->on_head(generation, ec); });
}

void UpstreamAttempt::on_head_bytes(unsigned generation, const ErrorCode& error, std::size_t bytes) {
  util::ClockTurn turn; // the time is read once in this handler
  if (!current(generation)) {
    return;
  }
  m_conn->buffer().commit(bytes);
  ErrorCode ec = error;
  if (ec == asio::error::eof) {
    // A head cut short is a partial message; none at all, Beast's end_of_stream.
    ec = {};
    if (m_parser->got_some()) {
      m_parser->put_eof(ec);
    } else {
      ec = http::error::end_of_stream;
    }
  } else if (!ec) {
    ec = parse_head();
    if (ec == http::error::need_more) {
      read_bytes(&UpstreamAttempt::on_head_bytes);
      return;
    }
  }
  on_head(generation, ec);
}

ErrorCode UpstreamAttempt::parse_head() {
  beast::flat_buffer& buffer = m_conn->buffer();
  ErrorCode ec;
  buffer.consume(m_parser->put(buffer.data(), ec));
  return ec;
}

void UpstreamAttempt::on_head(unsigned generation, const ErrorCode& ec) {
  util::ClockTurn turn; // the time is read once in this handler
  std::shared_ptr<AttemptEvents> events = current(generation);
  if (!events) {
    return;
  }
  if (ec) {
    fail(policy::TransportFailure::closed_before_response,
         ec == http::error::header_limit ? "response head over 64 KiB" : ec.message(),
         looks_stale(ec, false));
    return;
  }
  int status = static_cast<int>(m_parser->get().result_int());
  if (status >= 100 && status < 200 && status != 101) {
    if (++m_interim > k_max_interim_responses) {
      fail(policy::TransportFailure::closed_before_response, "too many interim responses");
      return;
    }
    read_head(); // an interim response: the real one follows on the same connection
    return;
  }
  events->attempt_head();
}

// The precise rule: a pooled connection, no byte of a response, the
// connection closed (any failure of the write; end of stream, RST or a
// truncated TLS stream while reading the head), and all within
// k_stale_window of the start of the send.
bool UpstreamAttempt::looks_stale(const ErrorCode& ec, bool writing) const {
  bool closed = writing || ec == http::error::end_of_stream || ec == asio::error::eof ||
                ec == asio::error::connection_reset || ec == asio::error::connection_aborted ||
                ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
  bool no_response = writing || !(m_parser && m_parser->got_some());
  return m_reused && closed && no_response && m_mono.now() - m_sent <= k_stale_window;
}

// A pooled connection the upstream had closed while idle fails at once,
// before any byte: that is not the key's fault, so try a fresh connection
// (once: the fresh one is not reused). Every other failure is the attempt's.
void UpstreamAttempt::fail(policy::TransportFailure failure, const std::string& detail, bool stale) {
  close();
  if (stale) {
    util::log_debug("key {}: pooled connection was closed ({}): retrying on a fresh one, not an attempt",
                    m_key.label, detail);
    ++m_generation;
    connect_fresh();
    return;
  }
  std::shared_ptr<AttemptEvents> events = m_events; // the report may abandon this attempt
  events->attempt_failed(failure, detail);
}

void UpstreamAttempt::abandon() {
  close();
  ++m_generation;
  m_events.reset();
}

void UpstreamAttempt::finish(MonoTime now) {
  if (m_conn && m_parser && m_parser->is_done() && m_parser->keep_alive()) {
    m_upstreams.put_idle(std::move(m_conn), now);
  }
  abandon();
}

std::shared_ptr<UpstreamConn> UpstreamAttempt::hand_over() {
  std::shared_ptr<UpstreamConn> conn = std::move(m_conn);
  abandon();
  return conn;
}

// A read that completed before the close may still be on its way through
// the loop, and Beast parses what it read before the handler sees that the
// attempt is over: the parser must no longer point into the client's piece
// buffer, which the connection's next exchange uses (or which went with the
// connection). With no buffer, Beast parses no body byte.
void UpstreamAttempt::close() {
  if (m_parser) {
    m_parser->get().body().data = nullptr;
    m_parser->get().body().size = 0;
  }
  if (m_conn) {
    m_conn->close();
    m_conn.reset();
  }
}

} // namespace keyshim::relay
