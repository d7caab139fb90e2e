// The load driver of the side-by-side benchmark: one thread, epoll, no
// library. Each mode runs one measurement against 127.0.0.1:PORT and prints
// one line of key=value pairs; every mode is bounded by --timeout seconds.
//
//   freeport                       a free loopback port (for the proxies)
//   wait     --port P              until P accepts a connection
//   procinfo --pids A[,B]          rss_kb hwm_kb threads fds cpu_s, summed
//   rps      --port P --path /json --conc C --seconds S [--warmup S]
//            [--method GET|POST] [--body BYTES] [--pids A,B]
//            closed loop, keep-alive: req/s, latency, CPU µs per request
//   seq      --port P --path /json --count N [--warmup N]
//            one keep-alive connection, one request at a time: TTFB, latency
//   events   --port P --streams K --events N --gap-us G [--size S]
//            /ts streams: receive time minus the upstream's send time
//   held     --port P --streams N [--hold-ms MS] [--pids A,B]
//            N concurrent /hold streams: time until each had its first byte
//   silent   --port P --silent N --path /json [--baseline N]
//            one request on a fresh connection, without and with N idle ones
//   bulk     --port P --streams K --size S --seconds S [--warmup S] [--pids]
//            [--batch B]   /sse?gap_us=0 streams (B events per chunk):
//            body bytes per second, CPU s per GB
//   first    --port P --path /json -- COMMAND ARGS...
//            starts COMMAND, then asks P until one request is answered:
//            the time from the start to that answer; stops COMMAND
//   ws       --port P --path /ws --conc C --size S --seconds S [--warmup S]
//            [--pids A,B]   C WebSocket connections, each sending an S-byte
//            text message and awaiting its echo, in a loop (loadgen_ws.cpp)
//
// Every HTTP mode takes --tls-ca FILE (TLS to P, trusting FILE, name
// "localhost") and --close 1 (each request asks `Connection: close`).
//
// This file: the command line's dispatch and the helper modes (freeport,
// wait, procinfo) and ws; the engine and the other modes are in loadgen_*
// files (loadgen_modes.hpp lists them).
#include "bench_net.hpp"
#include "bench_proc.hpp"
#include "bench_tls.hpp"
#include "loadgen_modes.hpp"
#include "loadgen_options.hpp"
#include "loadgen_ws.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace loadgen {

namespace {

int cmd_freeport() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback_v4(0);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    perror("loadgen: freeport");
    return 1;
  }
  printf("%d\n", ntohs(addr.sin_port));
  close(fd);
  return 0;
}

int cmd_wait(const Options& o) {
  uint64_t deadline = now_ns() + static_cast<uint64_t>(o.timeout * 1e9);
  while (now_ns() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = loopback_v4(o.port);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    close(fd);
    if (rc == 0) {
      printf("ready=1\n");
      return 0;
    }
    usleep(20000);
  }
  printf("ready=0\n");
  return 1;
}

int cmd_procinfo(const Options& o) {
  ProcInfo p = proc_info(o.pids, true);
  printf("rss_kb=%ld hwm_kb=%ld threads=%ld fds=%ld cpu_s=%.3f alive=%d\n", p.rss_kb, p.hwm_kb, p.threads,
         p.fds, p.cpu_s, p.ok ? 1 : 0);
  return p.ok ? 0 : 1;
}

int cmd_ws(const Options& o) {
  WsOptions w;
  w.port = o.port;
  w.path = o.path;
  w.conns = o.conc;
  w.size = static_cast<std::size_t>(o.size > 0 ? o.size : 64);
  w.seconds = o.seconds;
  w.warmup = o.warmup;
  w.timeout = o.timeout;
  w.pids = o.pids;
  return run_ws(w);
}

void usage() {
  fprintf(stderr, "usage: bench_loadgen freeport|wait|procinfo|rps|seq|events|held|silent|bulk|first|ws\n"
                  "       [--option value]... [-- COMMAND...]\n"
                  "(see the comment at the top of bench/loadgen.cpp)\n");
}

// The modes that talk to --port, once it is known and TLS is set up.
int run_port_mode(const Options& o) {
  if (o.mode == "wait") {
    return cmd_wait(o);
  }
  if (o.mode == "first") {
    return cmd_first(o);
  }
  if (o.mode == "ws") {
    return cmd_ws(o);
  }
  if (o.mode == "rps") {
    return cmd_rps(o);
  }
  if (o.mode == "seq") {
    return cmd_seq(o);
  }
  if (o.mode == "events") {
    return cmd_events(o);
  }
  if (o.mode == "held") {
    return cmd_held(o);
  }
  if (o.mode == "silent") {
    return cmd_silent(o);
  }
  if (o.mode == "bulk") {
    if (o.size <= 0) {
      fprintf(stderr, "loadgen: bulk needs --size\n");
      return 2;
    }
    return cmd_bulk(o);
  }
  usage();
  return 2;
}

// The whole program: the options, the modes that need no port, then the
// others.
int run(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, &o)) {
    usage();
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.mode == "freeport") {
    return cmd_freeport();
  }
  if (o.mode == "procinfo") {
    return cmd_procinfo(o);
  }
  if (o.port <= 0) {
    fprintf(stderr, "loadgen: --port is required\n");
    return 2;
  }
  if (!o.tls_ca.empty()) {
    g_client_tls = bench_tls_client(o.tls_ca.c_str());
    if (g_client_tls == nullptr) {
      return 2;
    }
  }
  return run_port_mode(o);
}

} // namespace

} // namespace loadgen

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  return loadgen::run(argc, argv);
}
