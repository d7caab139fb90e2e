#pragma once
// The load driver's modes (bench_loadgen MODE): one function per mode, each
// running one measurement and printing one line of key=value pairs, and the
// small helpers they share. The modes live by family: loadgen_closed_loop.cpp
// (rps, bulk), loadgen_latency.cpp (seq, events), loadgen_held.cpp (held),
// loadgen_fresh.cpp (silent, first); the helpers and ws in loadgen.cpp.
#include "loadgen_engine.hpp"
#include "loadgen_options.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace loadgen {

namespace {

// The request bytes every connection of a mode sends: METHOD PATH HTTP/1.1
// with Host, and with --body a JSON body padded to exactly that size.
inline std::string make_request(const Options& o, const std::string& path) {
  std::string r = o.method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o.port) +
                  "\r\nUser-Agent: keyshim-bench\r\nAccept: */*\r\n";
  if (o.close) {
    r += "Connection: close\r\n";
  }
  if (o.method == "POST" || o.body > 0) {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(o.body) + "\r\n\r\n";
    if (o.body > 0) {
      std::string body = R"({"model":"bench","messages":[{"role":"user","content":")";
      size_t pad = o.body > body.size() + 4 ? o.body - body.size() - 4 : 0;
      body.append(pad, 'a');
      body += "\"}]}";
      body.resize(o.body, ' ');
      r += body;
    }
  } else {
    r += "\r\n";
  }
  return r;
}

// Nanoseconds in microseconds.
inline double us(uint64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

// v printed with that many decimals, for a %s that may instead say "none".
inline std::string fixed(double v, int decimals) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Now plus --timeout: the bound of every mode.
inline uint64_t deadline_of(const Options& o) {
  return now_ns() + static_cast<uint64_t>(o.timeout * 1e9);
}

} // namespace

// Each mode: runs it with the options; returns the exit code.
int cmd_rps(const Options& o);
int cmd_bulk(const Options& o);
int cmd_seq(const Options& o);
int cmd_events(const Options& o);
int cmd_held(const Options& o);
int cmd_silent(const Options& o);
int cmd_first(const Options& o);

} // namespace loadgen
