#pragma once
// Both ends of a relayed WebSocket for tests, on Beast's websocket stream
// with blocking calls (each bounded by a 10 s socket timeout): an upstream
// that refuses handshakes as scripted and then echoes, closes or hangs up,
// and a client that opens a WebSocket through keyshim.
#include "support/http_fake_upstream.hpp"
#include "support/http_tls_fixture.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace keyshim::test {

namespace ws = boost::beast::websocket;
using WsSocket = ws::stream<boost::asio::ip::tcp::socket>;

struct WsMessage {
  bool text = false;
  std::string data;
};

// What the upstream does once it has accepted a handshake.
enum class WsBehaviour {
  echo,                // every message back as received (text or binary), until closed
  greet_then_echo,     // a text message "hello" at once, then echo
  close_after_first,   // after the first message: a close frame 4000 "bye"
  hang_up_after_first, // after the first message: close TCP without a close frame
  respond,             // every message is answered with the text messages of respond_with()
};

class WsUpstream {
public:
  WsUpstream();
  // Speaking TLS with `pki`'s server certificate (wss://localhost:PORT).
  explicit WsUpstream(const TestPki& pki);
  ~WsUpstream();
  WsUpstream(const WsUpstream&) = delete;
  WsUpstream& operator=(const WsUpstream&) = delete;

  int port() const { return m_port; }
  std::string base_url() const {
    return m_tls ? "https://localhost:" + std::to_string(m_port)
                 : "http://127.0.0.1:" + std::to_string(m_port);
  }

  // The next handshake is refused with this answer (a queue; once empty, accepted).
  void refuse_next(Scripted answer);
  void behave(WsBehaviour behaviour);
  // For WsBehaviour::respond: the events each message is answered with.
  void respond_with(std::vector<std::string> events);
  // ... on the next connection only (a queue), before respond_with's.
  void respond_next_connection_with(std::vector<std::string> events);

  std::vector<SeenRequest> handshakes() const;
  std::vector<WsMessage> received() const;
  // Wait until the upstream's side of a WebSocket has ended: the close code it
  // received (0: the connection ended without a close frame), or nullopt after 10 s.
  std::optional<int> wait_for_end(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

private:
  void accept_loop();
  void serve(boost::asio::ip::tcp::socket socket);
  template <class Stream> void serve_on(Stream& stream, boost::asio::ip::tcp::socket& raw);
  template <class Ws>
  void relay_messages(Ws& socket, WsBehaviour behaviour, const std::vector<std::string>& events);
  void ended(int code);

  boost::asio::io_context m_io;
  std::unique_ptr<boost::asio::ssl::context> m_tls;
  boost::asio::ip::tcp::acceptor m_acceptor;
  int m_port = 0;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_changed;
  std::deque<Scripted> m_refusals;
  WsBehaviour m_behaviour = WsBehaviour::echo;
  std::vector<std::string> m_events;
  std::deque<std::vector<std::string>> m_connection_events;
  std::vector<SeenRequest> m_handshakes;
  std::vector<WsMessage> m_received;
  std::vector<int> m_ends;
  std::vector<std::thread> m_workers;
  std::vector<boost::asio::ip::tcp::socket*> m_open; // accepted WebSockets, shut down on destruction
  bool m_stopping = false;
};

// A WebSocket client of keyshim's, opened at construction.
class WsClient {
public:
  // Open `target` on 127.0.0.1:`port` with `Authorization: Bearer keyshim` and `extra` fields.
  WsClient(int port, const std::string& target, std::vector<std::pair<std::string, std::string>> extra = {});

  // The handshake's answer: 101 when open, else the refusal's status and body.
  int status() const { return m_status; }
  const std::string& refusal_body() const { return m_body; }
  // Why the handshake failed, "" when it did not.
  const std::string& error() const { return m_error; }
  bool open() const { return m_status == 101; }
  WsSocket& socket() { return m_ws; }

  void send(const WsMessage& message);
  // One message, or nullopt when the connection ended (close_code() says how).
  std::optional<WsMessage> read();
  // The close code keyshim or the upstream sent (0 for none), after read() returned nullopt.
  int close_code() const { return m_close_code; }
  const std::string& close_reason() const { return m_close_reason; }
  // Pongs received while reading.
  const std::vector<std::string>& pongs() const { return m_pongs; }

private:
  boost::asio::io_context m_io;
  WsSocket m_ws;
  int m_status = 0;
  std::string m_body;
  std::string m_error;
  int m_close_code = 0;
  std::string m_close_reason;
  std::vector<std::string> m_pongs;
};

} // namespace keyshim::test
