#pragma once
// Upstream connections: one plain or TLS connection, and the idle ones kept
// per origin so the next request skips the TCP and TLS handshakes. Used only
// from the event loop's thread.
#include "config/config.hpp"
#include "relay/beast.hpp"
#include "relay/socket_read.hpp"
#include "relay/tls_contexts.hpp"
#include "relay/tls_socket.hpp"

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace keyshim::relay {

enum class ConnectFailure { none, connect, tls };

// How much one read from an upstream may take: every connection's buffer
// starts with room for k_read_bytes, a fast plain stream's grows to
// k_wide_read_bytes (Beast reads at most 64 KiB at once).
inline constexpr std::size_t k_read_bytes = 16 * 1024;
inline constexpr std::size_t k_wide_read_bytes = 64 * 1024;

// Shared: every pending operation holds the connection alive, so an
// attempt that is abandoned mid-operation (timeout, hang-up) is safe to drop.
class UpstreamConn : public std::enable_shared_from_this<UpstreamConn> {
public:
  // With `proxy`, connect() tunnels through it (CONNECT) to the upstream.
  UpstreamConn(Executor ex, std::string origin, std::shared_ptr<ssl::context> tls,
               std::optional<config::ProxyUrl> proxy = std::nullopt);

  const std::string& origin() const { return m_origin; }
  bool tls() const { return m_tls != nullptr; }
  Socket& socket() { return m_tls ? m_tls->next_layer() : m_plain; }
  beast::flat_buffer& buffer() { return m_buffer; }

  // Run `op` on the stream, plain or TLS: `op(stream)`.
  template <class Op> void with_stream(Op&& op) {
    if (m_tls) {
      op(*m_tls);
    } else {
      op(m_plain);
    }
  }

  // Resolve, connect (to the proxy, then CONNECT through it, when there is
  // one) and (for https) handshake with SNI and host name verification
  // against the upstream. `done(failure, detail)` runs once; detail is
  // key-free and credential-free. A proxy that cannot be reached or refuses
  // the tunnel is ConnectFailure::connect, like an unreachable upstream.
  using ConnectDone = std::function<void(ConnectFailure, std::string)>;
  void connect(const config::UpstreamUrl& url, ConnectDone done);

  // Reads what the stream has into `into`; `done(ec, n)` runs from the loop.
  // Neither kind tries a recv bound to fail (relay/socket_read.hpp).
  template <class Handler> void read_some(asio::mutable_buffer into, Handler&& done) {
    if (m_tls) {
      m_tls->async_read_some(into, std::forward<Handler>(done));
    } else {
      relay::read_some(m_plain, into, std::forward<Handler>(done));
    }
  }
  // As much of `buffers` as the socket takes without waiting; `ec` for a
  // failed write, none when the socket is full.
  std::size_t write_now(const std::array<asio::const_buffer, 2>& buffers, ErrorCode& ec);
  // For TLS: the decrypted bytes of records already received, appended to
  // buffer() without waiting for the network; how many (0 for plain).
  std::size_t read_received();
  // After a body piece of `bytes`: one that took over half of buffer() says
  // the upstream sends faster than it is relayed, and a plain connection's
  // later reads may take up to k_wide_read_bytes each (see the .cpp).
  void note_body_piece(std::size_t bytes);

  // Close now: pending operations finish with operation_aborted.
  void close();
  // For an idle connection: open, nothing left over from its last response,
  // and, with `peek`, no EOF, error or stray bytes waiting in the socket.
  bool looks_alive(bool peek);

  MonoTime idle_since{};

private:
  void on_resolved(const ErrorCode& ec, const tcp::resolver::results_type& results);
  void on_connected(const ErrorCode& ec);
  void on_tunnel(const std::string& failure);
  void start_session();
  void on_handshake(const ErrorCode& ec);
  void finish_connect(ConnectFailure failure, std::string detail);

  std::string m_origin;
  std::shared_ptr<ssl::context> m_context; // outlives a reload that replaced it
  Socket m_plain;
  std::unique_ptr<TlsSocket> m_tls;
  beast::flat_buffer m_buffer;
  std::optional<Resolver> m_resolver;
  std::string m_host; // the upstream's, for SNI and the certificate check
  int m_port = 0;
  std::optional<config::ProxyUrl> m_proxy;
  ConnectDone m_done;
};

class UpstreamPool {
public:
  explicit UpstreamPool(Executor ex);

  // "https://host:port|ca_file[|proxy]": connections are shared only within
  // one, so two proxies (or two proxy users) never share a connection.
  static std::string origin_of(const config::KeyConfig& key);

  // The most recently idle connection to `origin` that still looks alive at
  // `now`, else null. Connections idle for too long are closed on the way.
  std::shared_ptr<UpstreamConn> take_idle(const std::string& origin, MonoTime now);
  // A connection whose last exchange completed cleanly at `now`, for the next request.
  void put_idle(std::shared_ptr<UpstreamConn> conn, MonoTime now);
  // A new, unconnected connection, with its TLS context from `contexts` (the
  // published state's, built off the loop); null with `error` when the
  // context could not be made (an unreadable ca_file).
  // `origin` is origin_of(key).
  std::shared_ptr<UpstreamConn> make(const config::KeyConfig& key, const std::string& origin,
                                     const TlsContexts* contexts, std::string& error);
  // Close every idle connection (shutdown).
  void clear();
  std::size_t idle_count() const;

private:
  // A context the published state lacks (a state built without them), made
  // here once and kept.
  const TlsContexts::Entry& fallback_context(const std::optional<std::string>& ca_file);

  Executor m_ex;
  std::unordered_map<std::string, std::vector<std::shared_ptr<UpstreamConn>>> m_idle;
  std::map<std::string, TlsContexts::Entry> m_fallback;
};

} // namespace keyshim::relay
