// Reading a response's body, piece by piece as the exchange asks: from the
// bytes already buffered, else through the stream, plain or TLS.
#include "relay/upstream_attempt.hpp"

#include "util/clock.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/core/read_size.hpp>

namespace keyshim::relay {

// Body bytes the last read brought are parsed here, and reads go to the
// connection itself: Beast's http::async_read_some wraps the same read in a
// composed operation (a work guard, an extra executor and its own parse of
// one chunk), about 700 of a paced event's 3,800 instructions. A paced
// event's read empties the socket, so the read after it waits for the next
// without a recv first (relay/socket_read.hpp). A body that
// ends within the buffered bytes (a small response's comes whole with its
// head) is handed over at once; the piece of a longer one goes through the
// loop, so that a fast stream, whose every piece may find the next already
// received, never keeps the loop (or the stack) to itself.
void UpstreamAttempt::read_body() {
  m_parser->get().body().data = m_pieces;
  m_parser->get().body().size = m_piece_size;
  if (m_conn->buffer().size() != 0) {
    ErrorCode error;
    std::size_t n = parse_buffered(error);
    if (m_parser->is_done() && !error) {
      std::shared_ptr<UpstreamAttempt> self = shared_from_this(); // the report may drop the attempt
      std::shared_ptr<AttemptEvents> events = m_events;
      deliver(n, *events);
      return;
    }
    if (n != 0 || error) {
      asio::post(m_conn->socket().get_executor(),
                 [self = shared_from_this(), generation = m_generation, n, error] {
                   if (std::shared_ptr<AttemptEvents> events = self->current(generation)) {
                     self->hand_over_parsed(n, error, *events);
                   }
                 });
      return;
    }
  }
  read_bytes(&UpstreamAttempt::on_read);
}

void UpstreamAttempt::read_bytes(BytesHandler on_bytes) {
  beast::flat_buffer& buffer = m_conn->buffer();
  auto into = buffer.prepare(beast::read_size(buffer, k_wide_read_bytes));
  m_conn->read_some(into, [self = shared_from_this(), conn = m_conn, generation = m_generation,
                           on_bytes](const ErrorCode& ec, std::size_t bytes) {
    ((*self).*on_bytes)(generation, ec, bytes);
  });
}

void UpstreamAttempt::on_read(unsigned generation, const ErrorCode& error, std::size_t bytes) {
  util::ClockTurn turn; // the time is read once in this handler
  std::shared_ptr<AttemptEvents> events = current(generation);
  if (!events) {
    return; // abandoned: nothing is parsed, nothing lands in the client's piece buffer
  }
  m_conn->buffer().commit(bytes);
  if (error) {
    read_failed(error, *events);
    return;
  }
  ErrorCode parse_error;
  std::size_t n = parse_buffered(parse_error);
  hand_over_parsed(n, parse_error, *events);
}

// A read failed, as Beast's read reports it: the end of the stream ends a
// body that runs until it and cuts any other short.
void UpstreamAttempt::read_failed(ErrorCode error, AttemptEvents& events) {
  if (error == asio::error::eof) {
    error = {};
    m_parser->put_eof(error);
  }
  if (error) {
    events.attempt_body_failed(std::string_view(), error.message());
    return;
  }
  deliver(0, events);
}

// The body bytes before a parse error go to the client first, as a piece of
// their own; the error stays in the buffer, and the next parse reports it.
void UpstreamAttempt::hand_over_parsed(std::size_t n, const ErrorCode& parse_error, AttemptEvents& events) {
  if (parse_error && n == 0) {
    events.attempt_body_failed(std::string_view(), parse_error.message());
    return;
  }
  deliver(n, events);
}

// A piece of `n` bytes was read: the TLS records already received join it
// (a bounded loop: each round reads at least one byte of what has arrived),
// and it goes to the exchange.
void UpstreamAttempt::deliver(std::size_t n, AttemptEvents& events) {
  for (int round = 0; round < k_max_parsed_elements && !m_parser->is_done() &&
                      m_parser->get().body().size != 0 && m_conn->read_received() != 0;
       ++round) {
    ErrorCode met_again; // the bytes stay buffered: the next parse meets it and reports it
    n += parse_buffered(met_again);
  }
  m_conn->note_body_piece(n);
  bool done = m_parser->is_done();
  if (n == 0 && !done) {
    read_body(); // only a chunk header was parsed: an empty piece would end the stream
    return;
  }
  events.attempt_body(std::string_view(m_pieces, n), done);
}

// Beast's parser hands over one chunk at a time, although the read that
// fetched it may have brought many: an upstream that flushes every event as
// a chunk of its own (1 KiB each) would cost one client write, a system call,
// per event. So the chunks already in the buffer join the piece, as far as it
// has room; bytes that need another read (a cut chunk header) wait for it, so
// no byte is held back waiting for the next. Returns the body bytes added;
// `error` is a parse error met after them.
std::size_t UpstreamAttempt::parse_buffered(ErrorCode& error) {
  beast::flat_buffer& buffer = m_conn->buffer();
  auto& body = m_parser->get().body();
  std::size_t before = body.size;
  for (int element = 0; element < k_max_parsed_elements; ++element) {
    if (buffer.size() == 0 || body.size == 0 || m_parser->is_done()) {
      break;
    }
    ErrorCode ec;
    std::size_t used = m_parser->put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more || ec == http::error::need_buffer) {
      break; // a cut chunk header, or the piece is full
    }
    if (ec) {
      error = ec;
      break;
    }
    if (used == 0) {
      break;
    }
  }
  return before - body.size;
}

} // namespace keyshim::relay
