// bench_loadgen held: N concurrent /hold streams, opened a batch at a time,
// each answered with one event and then held open: how long until every
// stream had its first byte and its event, and the watched processes' peak
// RSS while they are all held.
#include "bench_proc.hpp"
#include "bench_text.hpp"
#include "loadgen_modes.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace loadgen {

namespace {

class Held : public Driver {
public:
  Held(Engine& e, const Options& o, uint64_t t0) : m_e(e), m_o(o), m_t0(t0) {
    m_req = make_request(o, "/hold?size=" + std::to_string(o.size > 0 ? o.size : 64));
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_first_byte(size_t, uint64_t now) override { m_first.push_back(now - m_t0); }
  void on_body(size_t i, const char*, size_t n, uint64_t now) override {
    Conn& c = m_e.conn(i);
    if (n > 0 && !c.got_event) {
      c.got_event = true;
      if (c.resp.status == 200) {
        m_completed++;
        m_last_event = now;
      } else {
        m_bad++;
      }
    }
  }
  void on_response(size_t i, uint64_t) override {
    // A hold stream never ends by itself: an ended answer is an error page.
    Conn& c = m_e.conn(i);
    if (!c.got_event) {
      c.got_event = true;
      m_bad++;
    }
    m_e.close_conn(i);
  }
  void on_closed(size_t i, uint64_t, bool) override {
    Conn& c = m_e.conn(i);
    if (!c.got_event) {
      c.got_event = true;
      m_failed++;
    }
  }
  // Connects are opened a batch at a time between events: each connect()
  // on loopback runs the handshake in the caller, so opening thousands in
  // one loop would leave every answer unread until the last one.
  bool busy() const override { return m_opened < m_e.size(); }
  void tick(uint64_t now) override {
    for (int k = 0; k < 64 && m_opened < m_e.size(); k++) {
      m_e.open_conn(m_opened++);
    }
    if (!m_o.pids.empty() && now >= m_next_sample) {
      m_next_sample = now + 10 * k_ms;
      sample_rss();
    }
    if (m_settled == 0 && m_completed + m_failed + m_bad >= static_cast<long>(m_e.size())) {
      m_settled = now;
    }
  }
  bool finished(uint64_t now) override {
    return m_settled != 0 && now >= m_settled + static_cast<uint64_t>(m_o.hold_ms) * k_ms;
  }
  // Peak RSS of each watched process and of their sum.
  void sample_rss() {
    m_peak_each.resize(m_o.pids.size(), 0);
    long sum = 0;
    for (size_t k = 0; k < m_o.pids.size(); k++) {
      long rss = proc_info({m_o.pids[k]}, false).rss_kb;
      m_peak_each[k] = std::max(m_peak_each[k], rss);
      sum += rss;
    }
    m_rss_peak = std::max(m_rss_peak, sum);
  }
  void report() {
    sample_rss();
    ProcInfo end = proc_info(m_o.pids, false);
    std::string each;
    for (long kb : m_peak_each) {
      if (!each.empty()) {
        each += ',';
      }
      each += std::to_string(kb);
    }
    size_t n = m_e.size();
    bool all_first = m_first.size() == n;
    uint64_t first_max = m_first.empty() ? 0 : *std::max_element(m_first.begin(), m_first.end());
    uint64_t event_all = m_completed == static_cast<long>(n) ? m_last_event - m_t0 : 0;
    printf("streams=%zu completed=%ld failed=%ld bad=%ld first_bytes=%zu all_first_byte_s=%s "
           "first_byte_p50_s=%.4f "
           "first_byte_max_s=%.4f all_first_event_s=%.4f rss_peak_kb=%ld rss_peak_each_kb=%s hwm_kb=%ld "
           "connect_failures=%ld\n",
           n, m_completed, m_failed, m_bad, m_first.size(),
           all_first ? fixed(secs(first_max), 4).c_str() : "none", secs(pct(m_first, 0.5)), secs(first_max),
           secs(event_all), m_rss_peak, each.empty() ? "-" : each.c_str(), end.hwm_kb,
           m_e.connect_failures());
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  uint64_t m_t0;
  std::vector<uint64_t> m_first;
  size_t m_opened = 0;
  long m_completed = 0;
  long m_failed = 0;
  long m_bad = 0;
  uint64_t m_last_event = 0;
  uint64_t m_settled = 0;
  uint64_t m_next_sample = 0;
  long m_rss_peak = 0;
  std::vector<long> m_peak_each;
};

} // namespace

int cmd_held(const Options& o) {
  uint64_t deadline = deadline_of(o);
  uint64_t t0 = now_ns();
  Engine e(o.port, static_cast<size_t>(o.streams));
  Held d(e, o, t0);
  e.run(d, deadline);
  d.report();
  return 0;
}

} // namespace loadgen
