#pragma once
// A scripted upstream on 127.0.0.1 written on raw sockets, so tests control
// every byte and every failure: resets before a reply, bodies cut mid-stream,
// silences, and it sees when keyshim hangs up on it.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace keyshim::test {

using namespace std::chrono_literals;

struct Scripted {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers; // e.g. {"Content-Type", "text/event-stream"}
  std::vector<std::string> pieces;                          // body, one write each
  bool chunked = true;                                      // else Content-Length framing
  std::chrono::milliseconds head_delay{0};                  // silence before the status line
  std::chrono::milliseconds piece_delay{0};                 // silence between pieces
  bool reset_before_reply = false;                          // close (RST) without any response
  int cut_after_pieces = -1;                                // close without ending the body after N pieces
  bool hold_after_first_piece = false;                      // wait for release() (or a hang-up) after piece 1
  bool hold_before_head = false; // wait for release() (or a hang-up) before replying
  std::string raw_at_cut{};      // written unframed where cut_after_pieces cuts (e.g. a broken chunk size)
  bool reset_at_cut = false;     // the cut is a RST, not a FIN
  bool head_only = false;        // set for HEAD requests: the length of the body, not the body
};

// A whole JSON answer with Content-Length framing: `status`, `body`, and
// `extra` headers after Content-Type.
inline Scripted json(int status, std::string body,
                     std::vector<std::pair<std::string, std::string>> extra = {}) {
  Scripted s;
  s.status = status;
  s.headers = {{"Content-Type", "application/json"}};
  s.headers.insert(s.headers.end(), extra.begin(), extra.end());
  s.pieces = {std::move(body)};
  s.chunked = false;
  return s;
}

struct SeenRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;            // de-chunked when keyshim sent it chunked
  bool client_hung_up = false; // keyshim closed the connection while we were responding

  // First value of a header (case-insensitive), "" when absent.
  std::string header(const std::string& name) const;
  bool has_header(const std::string& name) const;
};

class FakeUpstream {
public:
  FakeUpstream();
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  int port() const { return m_port; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

  // Queue the next responses; when the queue is empty: 200 {"ok":true}.
  void push(Scripted response);
  // Let held responses continue.
  void release();
  // Answer 401 with a JSON error (the script untouched) to every request whose
  // `header` (any case) is not exactly `value`, as a provider refuses a key
  // it did not issue. Such requests are still recorded in seen().
  void require_key(std::string header, std::string value);

  std::vector<SeenRequest> seen() const;
  std::size_t request_count() const;
  // Wait until at least `n` requests arrived / `n` hang-ups were seen.
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout = 10s) const;
  bool wait_for_hangups(std::size_t n, std::chrono::milliseconds timeout = 10s) const;
  std::size_t hangups() const;
  std::size_t connections() const;

private:
  void accept_loop();
  void serve_connection(int fd);
  bool respond(int fd, const Scripted& script, std::size_t request_index);
  // Sleep up to `d`, returning false early when the peer hangs up.
  bool pause(int fd, std::chrono::milliseconds d);
  // Wait for release(); false when the peer hangs up or 20 s pass.
  bool hold(int fd);
  // End a body early as `script` says: raw bytes, then FIN or RST.
  static void cut(int fd, const Scripted& script);
  void note_hangup(std::size_t request_index);

  int m_listen_fd = -1;
  int m_port = 0;
  std::thread m_acceptor;
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_changed;
  std::deque<Scripted> m_script;
  std::vector<SeenRequest> m_seen;
  std::size_t m_hangups = 0;
  std::size_t m_connections = 0;
  bool m_released = false;
  std::string m_key_header; // require_key(); empty: every request is accepted
  std::string m_key_value;
  bool m_stopping = false;
  std::vector<std::thread> m_workers;
  std::vector<int> m_open_fds;
};

} // namespace keyshim::test
