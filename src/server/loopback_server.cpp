#include "server/loopback_server.hpp"

#include "server/client_stream.hpp"
#include "util/log.hpp"

#include <sys/socket.h>
#include <unistd.h>

namespace keyshim::server {
namespace {

// The stream of the connection this worker thread is serving. httplib gives a
// handler no access to its connection; the relay needs it to notice a client
// that leaves while the upstream is still thinking.
thread_local ClientStream* t_stream = nullptr;

} // namespace

LoopbackServer::LoopbackServer(ConnectionLimits limits) : m_limits(limits) {
  set_keep_alive_max_count(limits.keep_alive_requests);
  set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits.read_timeout).count());
  set_write_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits.write_timeout).count());
  set_tcp_nodelay(true);
  // httplib binds with SO_REUSEPORT by default: a second keyshim on the same
  // port would bind silently and take half the traffic. Only SO_REUSEADDR.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

void LoopbackServer::set_head_limits(const HeadLimits& limits) {
  std::lock_guard lock(m_limits_mutex);
  m_head_limits = limits;
}

void LoopbackServer::begin_drain() {
  if (m_draining.exchange(true)) {
    return;
  }
  // Shutting the listening socket down wakes accept() with an error, which
  // ends httplib's accept loop; it then waits for its workers. The socket is
  // not marked invalid, so httplib does not cut the streams in progress.
  socket_t listening = svr_sock_;
  if (listening != INVALID_SOCKET) {
    ::shutdown(listening, SHUT_RDWR);
  }
}

void LoopbackServer::widen_backlog(int backlog) {
  socket_t listening = svr_sock_;
  if (listening != INVALID_SOCKET) {
    ::listen(listening, backlog);
  }
}

bool LoopbackServer::current_client_gone() {
  return t_stream != nullptr && t_stream->peer_closed();
}

bool LoopbackServer::refuse_head(ClientStream& stream, int status, std::string_view message) {
  util::log_warn("refused request: {} {}", status, message);
  stream.write_all(error_response(status, message));
  return false;
}

bool LoopbackServer::process_and_close_socket(socket_t sock) {
  ClientStream stream(static_cast<int>(sock), m_limits.read_timeout, m_limits.write_timeout);
  t_stream = &stream;
  HeadLimits head_limits;
  {
    std::lock_guard lock(m_limits_mutex);
    head_limits = m_head_limits;
  }
  auto stopping = [this] { return m_draining.load() || svr_sock_ == INVALID_SOCKET; };

  bool ok = false;
  for (std::size_t served = 0; served < m_limits.keep_alive_requests; ++served) {
    // A new connection gets the head timeout for its first request; between
    // requests, an idle keep-alive connection is closed sooner.
    auto idle_limit = served == 0 ? m_limits.head_timeout : m_limits.keep_alive;
    if (stream.wait_for_request(idle_limit, stopping) != ClientStream::Wait::ready) {
      break;
    }
    std::string_view head;
    ClientStream::HeadRead read = stream.read_head(head_limits.max_head_bytes, m_limits.head_timeout, head);
    if (read == ClientStream::HeadRead::too_large) {
      ok = refuse_head(stream, 431, "request headers exceed 64 KiB");
      break;
    }
    if (read == ClientStream::HeadRead::timeout) {
      ok = refuse_head(stream, 408, "request headers did not arrive within 30s");
      break;
    }
    if (read == ClientStream::HeadRead::closed) {
      break;
    }
    HeadVerdict verdict = check_head(head, head_limits);
    if (verdict.status != 0) {
      ok = refuse_head(stream, verdict.status, verdict.message);
      break;
    }
    // The head plus the largest body, plus room for chunk framing.
    stream.limit_body(head.size() + head_limits.max_body_bytes + head_limits.max_body_bytes / 8 + 64 * 1024);
    bool last = served + 1 == m_limits.keep_alive_requests || stopping();
    bool connection_closed = false;
    ok = process_request(stream, last, connection_closed, nullptr);
    if (!ok || connection_closed || last) {
      break;
    }
  }
  t_stream = nullptr;
  ::shutdown(static_cast<int>(sock), SHUT_RDWR);
  ::close(static_cast<int>(sock));
  return ok;
}

} // namespace keyshim::server
