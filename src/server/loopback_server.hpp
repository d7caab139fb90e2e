#pragma once
// httplib's Server with keyshim's connection handling: the head gate, a
// graceful drain, and a way for a handler to ask whether its client is
// still connected.
#include "server/request_head.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>

namespace keyshim::server {

struct ConnectionLimits {
  std::chrono::milliseconds head_timeout{30'000};   // whole head must arrive within this
  std::chrono::milliseconds keep_alive{5'000};      // idle time between requests
  std::chrono::milliseconds read_timeout{30'000};   // one read of a request body
  std::chrono::milliseconds write_timeout{300'000}; // a client that stops reading a stream
  std::size_t keep_alive_requests = 1000;
};

class LoopbackServer : public httplib::Server {
public:
  explicit LoopbackServer(ConnectionLimits limits);

  // The head limits; max_body_bytes follows the pool file across reloads.
  void set_head_limits(const HeadLimits& limits);

  // httplib listens with a backlog of 5: a burst of parallel sub-agents
  // connecting at once would overflow it and wait out SYN retransmits. Call
  // after binding; Linux and macOS let listen() resize a listening socket.
  void widen_backlog(int backlog);

  // Stop accepting connections and end idle keep-alive connections, but let
  // requests in progress (streams included) run to completion.
  void begin_drain();
  bool draining() const { return m_draining; }

  // For a handler: has the client of the request this thread is serving
  // hung up? False outside a handler.
  static bool current_client_gone();

private:
  bool process_and_close_socket(socket_t sock) override;
  bool refuse_head(class ClientStream& stream, int status, std::string_view message);

  ConnectionLimits m_limits;
  mutable std::mutex m_limits_mutex;
  HeadLimits m_head_limits;
  std::atomic<bool> m_draining{false};
};

} // namespace keyshim::server
