// What the soak's upstream and client agree on: the fault kinds, the request
// path that names one, the deterministic content a seed stands for, and a few
// blocking-socket helpers. Loopback only; no library beyond the C++ standard
// library and POSIX.
#pragma once

#include "bench_net.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace soak {

// One request's fate, chosen by the client and named in its path:
//   /soak/KIND/ID/SEED
// "Recoverable" kinds fail only the first attempt(s) of a request ID, before
// keyshim commits, so keyshim may fail over and the client still expects the
// SEED's stream; "cut" kinds break the stream after the head, so the client
// must see it end abnormally.
enum class Kind {
  sse,           // 200 SSE stream, chunked
  json,          // 200 JSON body with Content-Length, sent in pieces
  reset_head,    // first attempt: RST before any response byte
  stall_first,   // first attempt: silence past first_byte_timeout
  error_event,   // first attempt: 200 SSE whose first event is an error
  rate_limited,  // first attempt: 429 with one of several hint shapes
  unauthorized,  // first attempt: 401 (keyshim disables the key)
  server_errors, // first two attempts: 500, then 503
  reset_mid,     // cut: RST after some events
  stall_mid,     // cut: silence past idle_timeout after some events
  short_body,    // cut: Content-Length promises more than is sent, then FIN
  broken_chunk,  // cut: an invalid chunk size after some events
  probe,         // quiet-time probe: 200 with Connection: close
  ws,            // GET with Upgrade: websocket; the upstream echoes (ws_script)
  count
};

inline constexpr std::array<std::string_view, static_cast<std::size_t>(Kind::count)> k_kind_names = {
    "sse",           "json",      "reset_head", "stall_first", "error_event",  "rate_limited", "unauthorized",
    "server_errors", "reset_mid", "stall_mid",  "short_body",  "broken_chunk", "probe",        "ws"};

inline std::string_view kind_name(Kind kind) {
  return k_kind_names[static_cast<std::size_t>(kind)];
}

inline bool kind_from_name(std::string_view name, Kind& out) {
  for (std::size_t i = 0; i < k_kind_names.size(); ++i) {
    if (k_kind_names[i] == name) {
      out = static_cast<Kind>(i);
      return true;
    }
  }
  return false;
}

// Whether the stream is cut after commit (the client must see an abnormal end).
inline bool kind_cuts(Kind kind) {
  return kind == Kind::reset_mid || kind == Kind::stall_mid || kind == Kind::short_body ||
         kind == Kind::broken_chunk;
}

// Whether the answer is a Content-Length body rather than a chunked SSE stream.
inline bool kind_has_length(Kind kind) {
  return kind == Kind::json || kind == Kind::short_body || kind == Kind::probe;
}

struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
};

// The pieces of the body a seed stands for: an SSE event each, or a slice of
// a JSON document. Both sides generate them; the client compares bytes.
struct Content {
  std::string body;
  std::array<std::size_t, 32> cuts{}; // end offset of each piece
  std::size_t piece_count = 0;
};

inline std::string filler(SplitMix& rng, std::size_t size) {
  static constexpr char k_alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 ";
  std::string out(size, ' ');
  for (auto& c : out) {
    c = k_alphabet[rng.below(sizeof(k_alphabet) - 1)];
  }
  return out;
}

// SSE: 3..24 events of 16..1500 bytes of text, the last one "[DONE]".
// JSON: one document of 64..48000 bytes, sent in 2..12 pieces.
inline Content make_content(std::uint64_t seed, bool length_body) {
  SplitMix rng{seed};
  Content c;
  std::size_t pieces = length_body ? 2 + rng.below(11) : 3 + rng.below(22);
  if (length_body) {
    std::size_t size = 64 + rng.below(48000);
    c.body = "{\"soak\":\"" + filler(rng, size) + "\"}";
    for (std::size_t i = 1; i < pieces; ++i) {
      c.cuts[i - 1] = c.body.size() * i / pieces;
    }
  } else {
    for (std::size_t i = 0; i + 1 < pieces; ++i) {
      c.body +=
          "data: {\"i\":" + std::to_string(i) + ",\"t\":\"" + filler(rng, 16 + rng.below(1485)) + "\"}\n\n";
      c.cuts[i] = c.body.size();
    }
    c.body += "data: [DONE]\n\n";
  }
  c.piece_count = pieces;
  c.cuts[pieces - 1] = c.body.size();
  return c;
}

// What a WebSocket session of a seed does: `messages` round trips; when
// `upstream_cut_after` is below `messages`, the upstream echoes that many
// and hangs up abruptly (a reset, no close frame) when the next arrives.
struct WsScript {
  int messages = 1;
  int upstream_cut_after = 1 << 30;
};

inline WsScript ws_script(std::uint64_t seed) {
  SplitMix rng{seed ^ 0x5753u};
  WsScript s;
  s.messages = 1 + static_cast<int>(rng.below(8));
  if (rng.below(6) == 0) {
    s.upstream_cut_after = static_cast<int>(rng.below(static_cast<std::uint64_t>(s.messages)));
  }
  return s;
}

// The key names the soak's pool files use: sk-soak-GEN-INDEX-<fixed tail>.
// The upstream reports "GEN-INDEX" of the key it got in X-Soak-Key.
inline std::string key_id_of(std::string_view head) {
  constexpr std::string_view k_prefix = "\r\nAuthorization: Bearer sk-soak-";
  auto at = head.find(k_prefix);
  if (at == std::string_view::npos) {
    return {};
  }
  head.remove_prefix(at + k_prefix.size());
  auto second_dash = head.find('-', head.find('-') + 1);
  return second_dash == std::string_view::npos ? std::string{} : std::string(head.substr(0, second_dash));
}

inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Make the coming close() a TCP reset rather than a FIN (SO_LINGER 0).
inline void arm_reset(int fd) {
  linger lg{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

// Close with a TCP reset rather than a FIN.
inline void close_with_reset(int fd) {
  arm_reset(fd);
  ::close(fd);
}

inline void set_timeouts(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// A blocking connection to 127.0.0.1:port whose reads and writes give up
// after timeout_s; -1 when it cannot connect.
inline int connect_loopback(int port, int timeout_s) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback_v4(port);
  set_timeouts(fd, timeout_s);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace soak
