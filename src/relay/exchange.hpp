#pragma once
// The state one relayed request shares between its two threads:
//
//  - the upstream thread runs the attempts and, at the commit point, starts
//    feeding body bytes into a bounded queue;
//  - the handler thread (httplib's worker for the client connection) waits
//    for a decision, then either answers or drains the queue to the client,
//    and meanwhile watches the clock and the client.
//
// The queue bound is what turns a slow reader into backpressure on the
// upstream socket instead of memory growth. Thread-safe.
#include "relay/request_log.hpp"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace keyshim::relay {

using SteadyTime = std::chrono::steady_clock::time_point;

// A complete response that did not stream: an upstream error relayed, or one
// of keyshim's own (502, 503).
struct Answer {
  int status = 502;
  httplib::Headers headers;
  std::string body;
};

enum class Phase { waiting, committed, answered };

class Exchange {
public:
  explicit Exchange(std::size_t queue_limit = 1024 * 1024);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // ---- upstream thread ----------------------------------------------------

  // A new attempt is about to send on `client` (registered so it can be stopped).
  void begin_attempt(std::shared_ptr<httplib::Client> client);
  // The attempt's send() returned. True when the client may be reused: the
  // exchange was neither cancelled nor timed out while it ran.
  bool end_attempt();
  // The handler declared the current attempt past its first-byte deadline.
  bool attempt_expired() const;
  // The commit point: status and headers are final, body bytes follow.
  // Refused (false) when the exchange was cancelled, or the running attempt
  // was expired by the handler: its deadline won the race against the bytes.
  bool commit(int status, httplib::Headers headers);
  // Queue body bytes for the client, waiting while the queue is full. False
  // when the exchange was cancelled (stop reading the upstream).
  bool push(const char* data, std::size_t size);
  // The upstream body ended: `clean` when complete, else why it broke.
  void finish(bool clean, std::string why);
  // Decide without committing: a complete response for the client.
  void answer(Answer answer);
  bool cancelled() const;
  // Request log fields the upstream thread knows (chain, key, attempts...).
  template <typename F> void update_record(F&& change) {
    std::lock_guard lock(m_mutex);
    change(m_record);
  }

  // ---- handler thread -----------------------------------------------------

  // Run `body` on the upstream thread owned by this exchange.
  void start(std::function<void()> body);
  // Wait up to `tick` for the commit or an answer.
  Phase wait_decision(std::chrono::milliseconds tick);
  int status() const;
  httplib::Headers headers() const;
  // The upstream thread has returned (after a decision, or cancelled).
  bool upstream_done() const;
  Answer take_answer();

  struct Pull {
    std::string bytes;  // everything queued (may be empty on a tick)
    bool ended = false; // no more bytes will come
    bool clean = false; // ...because the upstream body completed
    std::string why;    // ...or why it broke
  };
  // Take queued bytes, waiting up to `tick` for some to arrive.
  Pull pull(std::chrono::milliseconds tick);
  // True when the body already completed and fits in one buffer: it can be
  // answered with a Content-Length instead of streaming.
  bool complete_before(std::size_t max_bytes) const;

  // Bytes arrived for the current attempt but are held back (the start of an
  // event stream, read before committing to it).
  void note_held_bytes();
  // Deadlines before the commit point: if no byte of the current attempt has
  // arrived within `first_byte`, or held bytes then stopped for longer than
  // `idle` (a stream sending only keep-alive comments while a model thinks is
  // alive), mark the attempt expired and stop its client.
  void enforce_attempt_deadlines(std::chrono::milliseconds first_byte, std::chrono::milliseconds idle);
  // Idle deadline after commit: true when the upstream has been silent for
  // longer than `timeout` (time spent blocked on a full queue does not count).
  bool idle_for_longer_than(std::chrono::milliseconds timeout) const;
  // The client left or keyshim is shutting down: stop the upstream now.
  void cancel(const std::string& why);
  // Cancel (if still running) and wait for the upstream thread to end.
  void cancel_and_join(const std::string& why);
  // Wait for the upstream thread to end on its own (after a decision).
  void join();

  RequestRecord record() const;
  void note_bytes_sent(std::size_t n);

private:
  void stop_active_client();

  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  Phase m_phase = Phase::waiting;
  int m_status = 0;
  httplib::Headers m_headers;
  Answer m_answer;

  std::deque<std::string> m_queue;
  std::size_t m_queued = 0;
  std::size_t m_queue_limit;
  bool m_finished = false;
  bool m_clean = false;
  std::string m_why;
  bool m_blocked_on_queue = false;
  SteadyTime m_last_activity;

  std::shared_ptr<httplib::Client> m_active;
  SteadyTime m_attempt_started;
  SteadyTime m_attempt_last_bytes;
  bool m_attempt_has_bytes = false;
  bool m_attempt_running = false;
  bool m_attempt_expired = false;
  bool m_cancelled = false;
  bool m_upstream_done = false;

  RequestRecord m_record;
  std::thread m_thread;
};

} // namespace keyshim::relay
