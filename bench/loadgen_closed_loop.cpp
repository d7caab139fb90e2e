// bench_loadgen rps and bulk: the closed-loop modes. C (rps) or K (bulk)
// keep-alive connections, each asking again as soon as its answer is
// complete, for a warm-up and then a measured window: requests per second
// and their latency (rps), or /sse body bytes per second (bulk), and the
// watched processes' CPU time per request or per GB in that window.
#include "bench_proc.hpp"
#include "bench_text.hpp"
#include "loadgen_modes.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace loadgen {

namespace {

// Reads the watched processes' CPU once when the window opens and once when
// it closes.
struct CpuWindow {
  std::vector<int> pids;
  uint64_t start = 0;
  uint64_t end = 0;
  double cpu0 = 0;
  double cpu1 = 0;
  bool have0 = false;
  bool have1 = false;

  void tick(uint64_t now) {
    if (!have0 && now >= start) {
      cpu0 = proc_info(pids, false).cpu_s;
      have0 = true;
    }
    if (!have1 && now >= end) {
      cpu1 = proc_info(pids, false).cpu_s;
      have1 = true;
    }
  }
  double cpu() const { return have0 && have1 ? cpu1 - cpu0 : 0; }
};

class Rps : public Driver {
public:
  Rps(Engine& e, const Options& o, uint64_t t0) : m_e(e), m_req(make_request(o, o.path)) {
    m_win.pids = o.pids;
    m_win.start = t0 + static_cast<uint64_t>(o.warmup * 1e9);
    m_win.end = m_win.start + static_cast<uint64_t>(o.seconds * 1e9);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    bool in_window = now >= m_win.start && now <= m_win.end;
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    } else if (in_window) {
      m_count++;
      m_lat.push_back(now - c.t_sent);
    }
    m_e.next_or_close(i, now >= m_win.end, m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (now < m_win.end && m_reconnects < 100000) {
      m_reconnects++;
      m_e.open_conn(i);
    }
  }
  void tick(uint64_t now) override { m_win.tick(now); }
  bool finished(uint64_t now) override { return now >= m_win.end && m_win.have1; }

  void report() {
    double window = secs(m_win.end - m_win.start);
    double cpu = m_win.cpu();
    printf("requests=%ld seconds=%.3f rps=%.0f lat_p50_us=%.1f lat_p99_us=%.1f bad=%ld errors=%ld "
           "reconnects=%ld cpu_s=%.3f cpu_us_per_req=%.2f\n",
           m_count, window, static_cast<double>(m_count) / window, us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)),
           m_bad, m_errors, m_reconnects, cpu, m_count > 0 ? cpu * 1e6 / static_cast<double>(m_count) : 0.0);
  }

private:
  Engine& m_e;
  std::string m_req;
  CpuWindow m_win;
  long m_count = 0;
  long m_bad = 0;
  long m_errors = 0;
  long m_reconnects = 0;
  std::vector<uint64_t> m_lat;
};

class Bulk : public Driver {
public:
  Bulk(Engine& e, const Options& o, uint64_t t0) : m_e(e) {
    std::string path = "/sse?events=" + std::to_string(o.events) +
                       "&gap_us=0&size=" + std::to_string(o.size) +
                       (o.batch > 0 ? "&batch=" + std::to_string(o.batch) : "");
    m_req = make_request(o, path);
    m_win.pids = o.pids;
    m_win.start = t0 + static_cast<uint64_t>(o.warmup * 1e9);
    m_win.end = m_win.start + static_cast<uint64_t>(o.seconds * 1e9);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_body(size_t, const char*, size_t n, uint64_t now) override {
    if (now >= m_win.start && now <= m_win.end) {
      m_bytes += n;
    }
  }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    m_streams++;
    m_e.next_or_close(i, now >= m_win.end, m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (now < m_win.end && m_errors < 1000) {
      m_e.open_conn(i);
    }
  }
  void tick(uint64_t now) override { m_win.tick(now); }
  bool finished(uint64_t now) override { return now >= m_win.end && m_win.have1; }
  void report() {
    double window = secs(m_win.end - m_win.start);
    double gb = static_cast<double>(m_bytes) / 1e9;
    double cpu = m_win.cpu();
    printf("bytes=%" PRIu64
           " seconds=%.3f gb_per_s=%.3f cpu_s=%.3f cpu_s_per_gb=%.3f streams_done=%ld bad=%ld "
           "errors=%ld\n",
           m_bytes, window, gb / window, cpu, gb > 0 ? cpu / gb : 0.0, m_streams, m_bad, m_errors);
  }

private:
  Engine& m_e;
  std::string m_req;
  CpuWindow m_win;
  uint64_t m_bytes = 0;
  long m_streams = 0;
  long m_bad = 0;
  long m_errors = 0;
};

// The closed-loop modes: open all `n` connections at once, run the driver
// (built from the engine, the options and the start time) to its end.
template <class D> int run_open_loop(const Options& o, int n) {
  uint64_t t0 = now_ns();
  Engine e(o.port, static_cast<size_t>(n));
  D d(e, o, t0);
  for (size_t i = 0; i < e.size(); i++) {
    e.open_conn(i);
  }
  e.run(d, deadline_of(o));
  d.report();
  return 0;
}

} // namespace

int cmd_rps(const Options& o) {
  return run_open_loop<Rps>(o, o.conc);
}

int cmd_bulk(const Options& o) {
  return run_open_loop<Bulk>(o, o.streams);
}

} // namespace loadgen
