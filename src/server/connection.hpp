#pragma once
// One client connection: read a request head through the gate, answer what
// keyshim answers itself, read the body, hand the request to a relay
// Exchange, and then read the next request or close. A connection waiting
// for its head costs a socket, a buffer and a timer: never a thread, and
// never another connection's time.
#include "relay/alarm.hpp"
#include "relay/beast.hpp"
#include "relay/exchange.hpp"
#include "server/connection_context.hpp"
#include "server/connection_registry.hpp"

#include <memory>
#include <optional>
#include <string>

namespace keyshim::server {

class Connection : public relay::Downstream,
                   public ConnectionRegistry::Member,
                   public relay::AlarmOwner,
                   public std::enable_shared_from_this<Connection> {
public:
  // Joins context.registry until destroyed. `context` outlives the connection.
  Connection(relay::Socket socket, const ConnectionContext& context);

  void start();
  // Shutdown began: close now if idle, else after the current response.
  void drain() override;
  // The drain ran out of time: end the current response and close.
  void abort() override;
  std::shared_ptr<ConnectionRegistry::Member> hold() override { return weak_from_this().lock(); }

  relay::Socket& socket() override { return m_socket; }
  void exchange_finished(Next next) override;
  std::string take_read_ahead() override;

  // The head, body and linger deadlines (relay::AlarmOwner).
  void on_alarm() override;
  std::shared_ptr<void> alarm_keepalive() override { return shared_from_this(); }

private:
  enum class Phase { reading_head, reading_body, continuing, exchanging, answering, closing, closed };

  void read_head();
  void read_more();
  void on_read(const relay::ErrorCode& ec, std::size_t n);
  void parse_head();
  void on_head();
  void send_continue();
  void read_body();
  void on_body(const relay::ErrorCode& ec);
  void dispatch();
  void answer_locally(std::string bytes, bool keep_alive);
  void refuse(int status, std::string_view message);
  void arm_timer(std::chrono::milliseconds limit);
  // After an answer that ends the connection: close at once when the client
  // asked for that and sent nothing more, else linger_close().
  void close_after_answer();
  void linger_close();
  void discard();
  void on_discarded(const relay::ErrorCode& ec, std::size_t n);
  void close();

  relay::Socket m_socket;
  const ConnectionContext& m_context;
  Phase m_phase = Phase::reading_head;
  relay::beast::flat_buffer m_buffer;
  std::optional<relay::RequestParser> m_parser;
  std::shared_ptr<const relay::PoolState> m_state; // the pool this request is served from
  std::shared_ptr<relay::Exchange> m_exchange;
  std::string m_out;    // bytes being written (a local answer, 100 Continue)
  relay::Alarm m_timer; // for m_deadline, on m_context.relay's clock
  std::chrono::steady_clock::time_point m_deadline{};
  int m_requests = 0;
  std::size_t m_lingered = 0; // bytes discarded while closing
  bool m_draining = false;
  bool m_client_closes = false; // the request being served said Connection: close (or was HTTP/1.0)
};

} // namespace keyshim::server
