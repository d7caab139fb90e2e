#include "server/connection.hpp"

#include "relay/answers.hpp"
#include "relay/socket_read.hpp"
#include "server/own_endpoints.hpp"
#include "server/published_state.hpp"
#include "server/request_head.hpp"
#include "util/ascii.hpp"
#include "util/clock.hpp"
#include "util/http_text.hpp"
#include "util/log.hpp"
#include "util/recycling_allocator.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include <fmt/format.h>

namespace keyshim::server {
namespace {

using namespace std::chrono;
using relay::ErrorCode;
namespace asio = relay::asio;
namespace http = relay::http;

constexpr std::size_t k_read_size = 16 * 1024;
constexpr std::size_t k_max_linger_bytes = 1024 * 1024;
constexpr auto k_linger_time = seconds(2);

std::string_view buffered(const relay::beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

} // namespace

Connection::Connection(relay::Socket socket, const ConnectionContext& context)
    : Member(context.registry), m_socket(std::move(socket)), m_context(context),
      m_timer(context.relay.alarms, *this) {
}

void Connection::start() {
  ErrorCode ignored;
  m_socket.set_option(relay::tcp::no_delay(true), ignored);
  m_buffer.reserve(k_read_size);
  read_head();
}

// A new connection, or a kept-alive one between requests. Until the head is
// complete the connection has the head timeout; nothing else waits on it.
void Connection::read_head() {
  m_phase = Phase::reading_head;
  m_parser.emplace();
  m_parser->header_limit(static_cast<std::uint32_t>(m_context.head_limits.max_head_bytes + 1024));
  arm_timer(m_requests == 0 || m_buffer.size() > 0 ? m_context.limits.head_timeout
                                                   : m_context.limits.keep_alive);
  if (m_buffer.size() > 0) {
    parse_head(); // a pipelined request is already here
    return;
  }
  read_more();
}

// A read that empties the socket lets the next one wait for the client
// without a recv first (relay/socket_read.hpp).
void Connection::read_more() {
  relay::read_some(m_socket, m_buffer.prepare(k_read_size),
                   [self = shared_from_this()](const ErrorCode& ec, std::size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(const ErrorCode& ec, std::size_t n) {
  util::ClockTurn turn; // the time is read once in this handler
  if (m_phase != Phase::reading_head) {
    return;
  }
  if (ec) {
    close(); // the client left between requests, or mid-head: nobody to answer
    return;
  }
  if (m_buffer.size() == 0 && m_requests > 0) {
    // The next request on a kept-alive connection has begun: from its first
    // byte it gets the head timeout, not what is left of the idle time.
    arm_timer(m_context.limits.head_timeout);
  }
  m_buffer.commit(n);
  parse_head();
}

// The gate runs on the raw bytes before Beast parses them: Beast accepts
// obs-fold and measures its head limit loosely, and a proxy must refuse the
// former and cap the latter exactly.
void Connection::parse_head() {
  // RFC 9112 §2.2: empty lines before a request line are ignored.
  while (buffered(m_buffer).substr(0, 2) == "\r\n") {
    m_buffer.consume(2);
  }
  const HeadLimits& limits = m_context.head_limits;
  std::string_view view = buffered(m_buffer);
  std::size_t end = find_head_end(view);
  if (end == std::string_view::npos) {
    if (view.size() > limits.max_head_bytes) {
      refuse(431, fmt::format("request headers exceed {} bytes", limits.max_head_bytes));
    } else {
      read_more();
    }
    return;
  }
  // The pool this request is served from: taken when its head is complete,
  // so a keep-alive connection sees a reload that happened while it idled.
  m_state = m_context.state.current();
  HeadLimits request_limits = limits;
  if (m_state->config) {
    request_limits.max_body_bytes = m_state->config->server.max_request_body;
  }
  m_parser->body_limit(request_limits.max_body_bytes);
  if (HeadVerdict verdict = check_head(view.substr(0, end), request_limits); verdict.status != 0) {
    refuse(verdict.status, verdict.message);
    return;
  }
  ErrorCode ec;
  std::size_t used = m_parser->put(m_buffer.data(), ec);
  m_buffer.consume(used);
  if (ec || !m_parser->is_header_done()) {
    refuse(ec == http::error::header_limit ? 431 : 400,
           fmt::format("malformed request head ({})", ec ? ec.message() : "incomplete"));
    return;
  }
  on_head();
}

void Connection::on_head() {
  const auto& head = m_parser->get();
  if (HeadVerdict verdict = check_parsed_head(head); verdict.status != 0) {
    refuse(verdict.status, verdict.message);
    return;
  }
  if (std::optional<relay::Answer> own = m_context.own.answer(head, *m_state)) {
    // A body we did not read would be parsed as the next request: close instead.
    bool keep_alive = own->status < 400 && m_parser->is_done() && m_parser->keep_alive() && !m_draining;
    answer_locally(relay::serialize(*own, head.method() == http::verb::head, !keep_alive), keep_alive);
    return;
  }
  arm_timer(m_context.limits.body_timeout); // replaces the head deadline, earlier or later
  if (util::iequals(relay::field_value(head, http::field::expect), "100-continue") && !m_parser->is_done()) {
    send_continue();
    return;
  }
  read_body();
}

// curl and some SDKs wait for this before sending a large body.
void Connection::send_continue() {
  m_phase = Phase::continuing;
  m_out.clear();
  util::append_status_line(m_out, 100);
  util::end_head(m_out);
  asio::async_write(m_socket, asio::buffer(m_out),
                    [self = shared_from_this()](const ErrorCode& ec, std::size_t) {
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->read_body();
                    });
}

void Connection::read_body() {
  m_phase = Phase::reading_body;
  if (m_parser->is_done()) {
    dispatch();
    return;
  }
  arm_timer(m_context.limits.body_timeout); // progress: the deadline only moves later, at no cost
  http::async_read_some(m_socket, m_buffer, *m_parser,
                        [self = shared_from_this()](const ErrorCode& ec, std::size_t) { self->on_body(ec); });
}

void Connection::on_body(const ErrorCode& ec) {
  util::ClockTurn turn; // the time is read once in this handler
  if (m_phase != Phase::reading_body) {
    return;
  }
  if (ec == http::error::body_limit) {
    refuse(413, fmt::format("request body exceeds max_request_body ({} bytes)",
                            m_state->config ? m_state->config->server.max_request_body : 0));
    return;
  }
  // End of stream in the middle of the body is Beast's partial_message: the
  // client hung up while uploading (Ctrl-C), not a malformed request.
  if (ec && ec != http::error::partial_message &&
      ec.category() == http::make_error_code(http::error::body_limit).category()) {
    refuse(400, fmt::format("malformed request body ({})", ec.message()));
    return;
  }
  if (ec) {
    util::log_info("client closed the connection while sending its request body; nothing was forwarded");
    close();
    return;
  }
  read_body();
}

// The connection's timer stays armed while the exchange runs (the exchange
// has deadlines of its own): it fires as a no-op at worst, and leaving it
// costs nothing, where cancelling and re-arming cost a system call each.
void Connection::dispatch() {
  std::optional<relay::Route> route = m_state->route(m_parser->get().target());
  if (!route) { // OwnEndpoints has answered every target that no pool owns
    refuse(404, "no pool serves this path");
    return;
  }
  m_phase = Phase::exchanging;
  m_client_closes = !m_parser->keep_alive(); // the parser's flags: the message's own walks the fields
  ++m_requests;
  m_context.registry.request_started();
  // An exchange is about 2 KiB, past malloc's per-thread cache: its block is kept for the next one.
  m_exchange = std::allocate_shared<relay::Exchange>(util::RecyclingAllocator<relay::Exchange>(), m_state,
                                                     *route, m_parser->release(), !m_client_closes,
                                                     shared_from_this(), m_context.relay);
  m_parser.reset();
  m_exchange->start();
}

void Connection::exchange_finished(Next next) {
  m_context.registry.request_finished();
  m_exchange.reset(); // the exchange's own handler still holds it while this runs
  if (next == Next::drop) {
    close();
  } else if (next == Next::request && !m_draining) {
    read_head();
  } else {
    close_after_answer();
  }
}

std::string Connection::take_read_ahead() {
  std::string bytes(buffered(m_buffer));
  m_buffer.clear();
  return bytes;
}

void Connection::answer_locally(std::string bytes, bool keep_alive) {
  m_phase = Phase::answering;
  m_out = std::move(bytes);
  asio::async_write(m_socket, asio::buffer(m_out),
                    [self = shared_from_this(), keep_alive](const ErrorCode& ec, std::size_t) {
                      if (ec) {
                        self->close();
                      } else if (keep_alive && !self->m_draining) {
                        ++self->m_requests;
                        self->read_head();
                      } else {
                        self->linger_close();
                      }
                    });
}

// One answer, then the connection closes: the bytes after a malformed head
// cannot be trusted to start a request (that is how requests are smuggled).
void Connection::refuse(int status, std::string_view message) {
  util::log_warn("refused a request: {} {}", status, message);
  answer_locally(error_response(status, message), false);
}

void Connection::arm_timer(std::chrono::milliseconds limit) {
  m_deadline = m_context.relay.mono.now() + limit;
  m_timer.arm(m_deadline);
}

// Progress only moves m_deadline; a timer that fires early re-arms itself.
void Connection::on_alarm() {
  if (m_phase == Phase::closed || m_phase == Phase::exchanging || m_phase == Phase::answering) {
    return; // the next arm_timer starts a wait again
  }
  if (m_context.relay.mono.now() < m_deadline) {
    m_timer.arm(m_deadline);
    return;
  }
  switch (m_phase) {
  case Phase::reading_head:
    if (m_buffer.size() == 0 && m_requests > 0) {
      close(); // an idle keep-alive connection: close quietly
    } else {
      m_socket.cancel();
      refuse(408, "the request head did not arrive in time");
    }
    break;
  case Phase::reading_body:
    m_socket.cancel();
    refuse(408, "the request body stalled");
    break;
  case Phase::closing:
    close();
    break;
  default:
    break;
  }
}

// A client that asked for the close and sent nothing past its request has
// nothing for a reset to destroy: the connection closes at once, as nginx's
// does (lingering costs a shutdown, a read of the client's FIN and a trip
// through the loop). One that may still be sending gets the lingering close.
// A socket its last read emptied, with no readiness reported since, holds
// nothing; only one that may is asked (an ioctl).
void Connection::close_after_answer() {
  ErrorCode ec;
  bool sent_more =
      m_buffer.size() != 0 || (relay::may_hold_bytes(m_socket) && (m_socket.available(ec) != 0 || ec));
  if (m_client_closes && !sent_more) {
    close();
    return;
  }
  linger_close();
}

// Closing with unread bytes in the socket makes the kernel send a reset,
// which can destroy the answer before the client reads it. Stop sending,
// read and discard for a moment, then close (nginx's lingering close).
void Connection::linger_close() {
  m_phase = Phase::closing;
  ErrorCode ignored;
  m_socket.shutdown(relay::tcp::socket::shutdown_send, ignored);
  arm_timer(duration_cast<milliseconds>(k_linger_time));
  m_buffer.clear();
  m_lingered = 0;
  discard();
}

void Connection::discard() {
  m_socket.async_read_some(
      m_buffer.prepare(k_read_size),
      [self = shared_from_this()](const ErrorCode& ec, std::size_t n) { self->on_discarded(ec, n); });
}

void Connection::on_discarded(const ErrorCode& ec, std::size_t n) {
  if (m_phase != Phase::closing) {
    return;
  }
  m_lingered += n;
  if (ec || m_lingered > k_max_linger_bytes) {
    close();
    return;
  }
  discard();
}

void Connection::close() {
  if (m_phase == Phase::closed) {
    return;
  }
  m_phase = Phase::closed;
  m_timer.cancel();
  ErrorCode ignored;
  m_socket.close(ignored); // sends the FIN itself: a shutdown first is a wasted call
}

void Connection::drain() {
  m_draining = true;
  if (m_phase == Phase::reading_head && m_buffer.size() == 0) {
    close();
  }
}

// An exchange ends itself (a WebSocket with close frames first) and then
// closes this connection through exchange_finished.
void Connection::abort() {
  m_draining = true;
  if (auto exchange = m_exchange) { // keep it alive through its own ending
    exchange->abort("keyshim is shutting down");
    return;
  }
  close();
}

} // namespace keyshim::server
