// bench_loadgen seq and events: what one request or one event costs in
// time, without load. seq: one keep-alive connection, one request at a time
// (time to first byte, latency); events: K /ts streams whose events carry
// the upstream's send time (receive time minus send time, per event).
#include "bench_text.hpp"
#include "loadgen_modes.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace loadgen {

namespace {

class Seq : public Driver {
public:
  Seq(Engine& e, const Options& o) : m_e(e), m_o(o), m_req(make_request(o, o.path)) {}
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_response(size_t i, uint64_t now) override {
    Conn& c = m_e.conn(i);
    m_done++;
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    if (m_done > m_o.warmup_count) {
      m_ttfb.push_back(c.t_first - c.t_sent);
      m_lat.push_back(now - c.t_sent);
    }
    m_e.next_or_close(i, finished(now), m_req);
  }
  void on_closed(size_t i, uint64_t now, bool error) override {
    if (error) {
      m_errors++;
    }
    if (!finished(now) && m_errors < 1000) {
      m_reconnects++;
      m_e.open_conn(i);
    }
  }
  bool finished(uint64_t) override { return m_done >= m_o.count + m_o.warmup_count || m_errors >= 1000; }
  void report(bool in_time) {
    printf(
        "requests=%zu ttfb_p50_us=%.1f ttfb_p99_us=%.1f lat_p50_us=%.1f lat_p99_us=%.1f bad=%ld errors=%ld "
        "reconnects=%ld complete=%d\n",
        m_lat.size(), us(pct(m_ttfb, 0.5)), us(pct(m_ttfb, 0.99)), us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)),
        m_bad, m_errors, m_reconnects, in_time ? 1 : 0);
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  long m_done = 0;
  long m_bad = 0;
  long m_errors = 0;
  long m_reconnects = 0;
  std::vector<uint64_t> m_ttfb;
  std::vector<uint64_t> m_lat;
};

class Events : public Driver {
public:
  Events(Engine& e, const Options& o) : m_e(e), m_o(o) {
    std::string path = "/ts?events=" + std::to_string(o.events) + "&gap_us=" + std::to_string(o.gap_us) +
                       "&size=" + std::to_string(o.size > 0 ? o.size : 64);
    m_req = make_request(o, path);
  }
  void on_connected(size_t i) override { m_e.send(i, m_req); }
  void on_body(size_t i, const char* p, size_t n, uint64_t now) override {
    Conn& c = m_e.conn(i);
    while (n > 0) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - p) : n;
      if (c.line.size() < 256) {
        c.line.append(p, std::min(take, 256 - c.line.size()));
      }
      if (nl == nullptr) {
        return;
      }
      if (c.line.compare(0, 8, "data: t=") == 0) {
        uint64_t sent = strtoull(c.line.c_str() + 8, nullptr, 10);
        // The first event of each stream also carries the proxy's setup
        // cost; TTFB measures that, this measures relaying.
        if (c.events_seen++ > 0 && sent <= now) {
          m_lat.push_back(now - sent);
        }
      }
      c.line.clear();
      p += take + 1;
      n -= take + 1;
    }
  }
  void on_response(size_t i, uint64_t) override {
    Conn& c = m_e.conn(i);
    if (c.resp.status != 200 || c.resp.bad) {
      m_bad++;
    }
    m_done++;
    m_e.close_conn(i);
  }
  void on_closed(size_t, uint64_t, bool error) override {
    if (error) {
      m_errors++;
      m_done++;
    }
  }
  bool finished(uint64_t) override { return m_done >= static_cast<long>(m_e.size()); }
  void report(bool in_time) {
    long expected = static_cast<long>(m_e.size()) * (m_o.events - 1);
    printf("events=%zu expected=%ld lat_p50_us=%.1f lat_p99_us=%.1f lat_max_us=%.1f bad=%ld errors=%ld "
           "complete=%d\n",
           m_lat.size(), expected, us(pct(m_lat, 0.5)), us(pct(m_lat, 0.99)), us(pct(m_lat, 1.0)), m_bad,
           m_errors, in_time ? 1 : 0);
  }

private:
  Engine& m_e;
  const Options& m_o;
  std::string m_req;
  long m_done = 0;
  long m_bad = 0;
  long m_errors = 0;
  std::vector<uint64_t> m_lat;
};

} // namespace

int cmd_seq(const Options& o) {
  Engine e(o.port, 1);
  Seq d(e, o);
  e.open_conn(0);
  bool ok = e.run(d, deadline_of(o));
  d.report(ok);
  return 0;
}

int cmd_events(const Options& o) {
  Engine e(o.port, static_cast<size_t>(o.streams));
  Events d(e, o);
  for (size_t i = 0; i < e.size(); i++) {
    e.open_conn(i);
  }
  bool ok = e.run(d, deadline_of(o));
  d.report(ok);
  return 0;
}

} // namespace loadgen
