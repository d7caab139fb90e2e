// bench_loadgen silent and first: one request on a fresh connection, timed
// from connect() to its last byte. silent: without and then with N idle
// connections held open; first: right after starting a command, until it
// answers.
#include "bench_text.hpp"
#include "loadgen_modes.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace loadgen {

namespace {

// One request on a fresh connection, timed from connect() to the last byte.
class OneShot : public Driver {
public:
  OneShot(Engine& e, const Options& o) : m_e(e), m_req(make_request(o, o.path)) {}
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    m_status = c.resp.status;
    m_lat = now - c.t_open;
    m_done = true;
    m_e.close_conn(i);
  }
  void on_closed(size_t, uint64_t, bool error) override {
    if (error) {
      m_done = true;
      m_status = -1;
    }
  }
  bool finished(uint64_t) override { return m_done; }
  int status() const { return m_status; }
  uint64_t latency() const { return m_lat; }

private:
  Engine& m_e;
  std::string m_req;
  bool m_done = false;
  int m_status = 0;
  uint64_t m_lat = 0;
};

// Times one fresh request; 0 when it failed or ran out of time.
uint64_t one_request(const Options& o, double timeout_s, int* status) {
  Engine e(o.port, 1);
  OneShot shot(e, o);
  e.open_conn(0);
  bool ok = e.run(shot, now_ns() + static_cast<uint64_t>(timeout_s * 1e9));
  *status = ok ? shot.status() : 0;
  return ok && shot.status() > 0 ? shot.latency() : 0;
}

// Connections that connect and then say nothing.
class Silent : public Driver {
public:
  explicit Silent(Engine& e) : m_e(e) {}
  void on_connected(size_t) override { m_connected++; }
  void on_response(size_t i, uint64_t) override { m_e.close_conn(i); }
  void on_closed(size_t, uint64_t, bool) override { m_failed++; }
  bool finished(uint64_t) override { return m_connected + m_failed >= static_cast<long>(m_e.size()); }
  long connected() const { return m_connected; }

private:
  Engine& m_e;
  long m_connected = 0;
  long m_failed = 0;
};

// Starts the command with stdout on stderr; it dies with this process.
pid_t spawn(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(2, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// SIGTERM, then SIGKILL after 5 s; reaps it.
void stop_child(pid_t pid) {
  kill(pid, SIGTERM);
  for (int k = 0; k < 500; k++) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      return;
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

} // namespace

int cmd_silent(const Options& o) {
  // A first request after a pause costs more than one in a busy loop
  // (caches, wake-ups), so both sides are measured the same way: a pause,
  // then one request on a fresh connection.
  const useconds_t pause_us = 200000;
  std::vector<uint64_t> base;
  for (int k = 0; k < o.baseline; k++) {
    usleep(pause_us);
    int status = 0;
    uint64_t lat = one_request(o, 5, &status);
    if (lat > 0 && status == 200) {
      base.push_back(lat);
    }
  }
  // The silent ones: connected, then nothing; the pause lets the server
  // accept them and do what it does with them.
  Engine silent(o.port, static_cast<size_t>(o.silent));
  Silent s(silent);
  for (size_t i = 0; i < silent.size(); i++) {
    silent.open_conn(i);
  }
  silent.run(s, now_ns() + 3 * k_s);
  usleep(pause_us);
  int status = 0;
  const uint64_t t_with = now_ns();
  uint64_t first = one_request(o, o.timeout, &status);
  // The first request is the figure; a few more, measured the same way with
  // the silent ones still open, tell an effect from a noisy moment.
  std::vector<uint64_t> with;
  if (first > 0) {
    with.push_back(first);
    for (int k = 1; k < o.baseline; k++) {
      double left = o.timeout - secs(now_ns() - t_with) - 0.2;
      if (left < 0.5) {
        break; // the phase's bound holds for all of them together
      }
      usleep(pause_us);
      int st = 0;
      uint64_t lat = one_request(o, std::min(left, 5.0), &st);
      if (lat > 0 && st == 200) {
        with.push_back(lat);
      }
    }
  }
  printf("silent=%d connected=%ld baseline_p50_us=%.1f with_silent_us=%s with_silent_p50_us=%s status=%d "
         "complete=%d\n",
         o.silent, s.connected(), us(pct(base, 0.5)), first > 0 ? fixed(us(first), 1).c_str() : "timeout",
         with.empty() ? "timeout" : fixed(us(pct(with, 0.5)), 1).c_str(), status, first > 0 ? 1 : 0);
  return 0;
}

// The first request after a start: the command is started, then fresh
// connections try a request every 0.2 ms until one is answered 200. The
// figures: start to that answer; that request alone (connect to last
// byte; a proxy that loads something at its first request pays it here);
// and a second request after it, for comparison.
int cmd_first(const Options& o) {
  const uint64_t t0 = now_ns();
  const uint64_t deadline = t0 + static_cast<uint64_t>(o.timeout * 1e9);
  pid_t pid = spawn(o.command);
  if (pid < 0) {
    perror("loadgen: fork");
    return 1;
  }
  int status = 0;
  long tries = 0;
  uint64_t first = 0;
  uint64_t t_answer = 0;
  bool exited = false; // reaped: its pid may belong to another process now
  while (first == 0 && now_ns() < deadline && !exited) {
    tries++;
    first = one_request(o, secs(deadline - now_ns()), &status);
    t_answer = now_ns();
    if (first == 0) {
      exited = waitpid(pid, nullptr, WNOHANG) == pid;
      usleep(200);
    }
  }
  int status2 = 0;
  uint64_t second = first > 0 && status == 200 ? one_request(o, 5, &status2) : 0;
  if (!exited) {
    stop_child(pid);
  } else {
    fprintf(stderr, "loadgen: %s exited before answering\n", o.command[0].c_str());
  }
  bool ok = first > 0 && status == 200;
  printf("first_answer_ms=%s first_request_ms=%s second_request_ms=%s status=%d tries=%ld complete=%d\n",
         ok ? fixed(secs(t_answer - t0) * 1e3, 2).c_str() : "none",
         ok ? fixed(secs(first) * 1e3, 2).c_str() : "none",
         second > 0 ? fixed(secs(second) * 1e3, 2).c_str() : "none", status, tries, ok ? 1 : 0);
  return 0;
}

} // namespace loadgen
