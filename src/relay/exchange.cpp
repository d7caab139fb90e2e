#include "relay/exchange.hpp"

namespace keyshim::relay {

Exchange::Exchange(std::size_t queue_limit)
    : m_queue_limit(queue_limit), m_last_activity(std::chrono::steady_clock::now()) {
}

Exchange::~Exchange() {
  // Never let a joinable thread reach std::thread's destructor (terminate).
  cancel_and_join("request abandoned");
}

void Exchange::start(std::function<void()> body) {
  m_thread = std::thread([this, body = std::move(body)] {
    body();
    std::lock_guard lock(m_mutex);
    m_upstream_done = true;
    m_changed.notify_all();
  });
}

void Exchange::begin_attempt(std::shared_ptr<httplib::Client> client) {
  std::lock_guard lock(m_mutex);
  m_active = std::move(client);
  m_attempt_started = std::chrono::steady_clock::now();
  m_attempt_has_bytes = false;
  m_attempt_running = true;
  m_attempt_expired = false;
}

bool Exchange::end_attempt() {
  std::lock_guard lock(m_mutex);
  // Cleared under the same lock cancel() reads it under: a client that a
  // cancel may have stopped is never handed back to the idle pool.
  m_active.reset();
  m_attempt_running = false;
  return !m_cancelled && !m_attempt_expired;
}

bool Exchange::attempt_expired() const {
  std::lock_guard lock(m_mutex);
  return m_attempt_expired;
}

bool Exchange::commit(int status, httplib::Headers headers) {
  std::lock_guard lock(m_mutex);
  if (m_cancelled || (m_attempt_running && m_attempt_expired)) {
    return false;
  }
  m_status = status;
  m_headers = std::move(headers);
  m_phase = Phase::committed;
  m_last_activity = std::chrono::steady_clock::now();
  m_changed.notify_all();
  return true;
}

bool Exchange::push(const char* data, std::size_t size) {
  std::unique_lock lock(m_mutex);
  m_blocked_on_queue = true;
  m_changed.wait(lock, [&] { return m_cancelled || m_queued < m_queue_limit; });
  m_blocked_on_queue = false;
  m_last_activity = std::chrono::steady_clock::now();
  if (m_cancelled) {
    return false;
  }
  m_queue.emplace_back(data, size);
  m_queued += size;
  m_changed.notify_all();
  return true;
}

void Exchange::finish(bool clean, std::string why) {
  std::lock_guard lock(m_mutex);
  m_finished = true;
  m_clean = clean;
  m_why = std::move(why);
  m_changed.notify_all();
}

void Exchange::answer(Answer answer) {
  std::lock_guard lock(m_mutex);
  m_answer = std::move(answer);
  m_phase = Phase::answered;
  m_changed.notify_all();
}

bool Exchange::cancelled() const {
  std::lock_guard lock(m_mutex);
  return m_cancelled;
}

Phase Exchange::wait_decision(std::chrono::milliseconds tick) {
  std::unique_lock lock(m_mutex);
  m_changed.wait_for(lock, tick, [&] { return m_phase != Phase::waiting || m_upstream_done; });
  return m_phase;
}

int Exchange::status() const {
  std::lock_guard lock(m_mutex);
  return m_status;
}

bool Exchange::upstream_done() const {
  std::lock_guard lock(m_mutex);
  return m_upstream_done;
}

httplib::Headers Exchange::headers() const {
  std::lock_guard lock(m_mutex);
  return m_headers;
}

Answer Exchange::take_answer() {
  std::lock_guard lock(m_mutex);
  return std::move(m_answer);
}

Exchange::Pull Exchange::pull(std::chrono::milliseconds tick) {
  std::unique_lock lock(m_mutex);
  m_changed.wait_for(lock, tick, [&] { return !m_queue.empty() || m_finished || m_cancelled; });
  Pull out;
  if (m_queue.size() == 1) {
    out.bytes = std::move(m_queue.front());
  } else {
    out.bytes.reserve(m_queued);
    for (std::string& chunk : m_queue) {
      out.bytes += chunk;
    }
  }
  m_queue.clear();
  m_queued = 0;
  out.ended = m_finished || m_cancelled;
  out.clean = m_finished && m_clean;
  out.why = m_cancelled && !m_finished ? "cancelled" : m_why;
  m_changed.notify_all(); // room in the queue again
  return out;
}

bool Exchange::complete_before(std::size_t max_bytes) const {
  std::lock_guard lock(m_mutex);
  return m_finished && m_clean && m_queued <= max_bytes;
}

void Exchange::note_held_bytes() {
  std::lock_guard lock(m_mutex);
  m_attempt_has_bytes = true;
  m_attempt_last_bytes = std::chrono::steady_clock::now();
}

void Exchange::enforce_attempt_deadlines(std::chrono::milliseconds first_byte,
                                         std::chrono::milliseconds idle) {
  {
    std::lock_guard lock(m_mutex);
    if (m_phase != Phase::waiting || !m_attempt_running) {
      return;
    }
    auto now = std::chrono::steady_clock::now();
    bool late =
        m_attempt_has_bytes ? now - m_attempt_last_bytes > idle : now - m_attempt_started > first_byte;
    if (!late) {
      return;
    }
    m_attempt_expired = true;
  }
  stop_active_client();
}

bool Exchange::idle_for_longer_than(std::chrono::milliseconds timeout) const {
  std::lock_guard lock(m_mutex);
  return !m_finished && !m_blocked_on_queue && std::chrono::steady_clock::now() - m_last_activity > timeout;
}

void Exchange::cancel(const std::string& why) {
  {
    std::lock_guard lock(m_mutex);
    if (m_cancelled || m_upstream_done) {
      return;
    }
    m_cancelled = true;
    if (m_why.empty()) {
      m_why = why;
    }
    m_changed.notify_all();
  }
  stop_active_client();
}

void Exchange::stop_active_client() {
  std::shared_ptr<httplib::Client> client;
  {
    std::lock_guard lock(m_mutex);
    client = m_active;
  }
  // Outside our lock: stop() can block while the client is connecting.
  if (client) {
    client->stop();
  }
}

void Exchange::cancel_and_join(const std::string& why) {
  if (!m_thread.joinable()) {
    return;
  }
  cancel(why);
  // httplib's stop() is a no-op until send() has registered its socket, so
  // repeat it until the upstream thread notices. Bounded by the connect
  // timeout: send() cannot stay in connect longer than that.
  std::unique_lock lock(m_mutex);
  while (!m_upstream_done) {
    if (m_changed.wait_for(lock, std::chrono::milliseconds(20), [&] { return m_upstream_done; })) {
      break;
    }
    lock.unlock();
    stop_active_client();
    lock.lock();
  }
  lock.unlock();
  m_thread.join();
}

void Exchange::join() {
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

RequestRecord Exchange::record() const {
  std::lock_guard lock(m_mutex);
  return m_record;
}

void Exchange::note_bytes_sent(std::size_t n) {
  std::lock_guard lock(m_mutex);
  m_record.bytes += n;
}

} // namespace keyshim::relay
