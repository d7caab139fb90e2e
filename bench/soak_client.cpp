// The soak's driver: concurrent streams through keyshim with faults chosen at
// random, random client hang-ups, SIGHUP reloads that rotate the keys, and
// keyshim's RSS and open descriptors compared between a quiet moment after
// the warm-up and a quiet moment after the load. Prints a summary; exits 1 on
// any violation or leak, 2 on bad usage.
//
//   bench_soak_client init-pool FILE --upstream-port U
//   bench_soak_client run --port K --pid P --pool-file FILE --upstream-port U
//       [--minutes M] [--warmup-seconds W] [--concurrency C] [--seed S]
//       [--reload-seconds R] [--rss-tolerance-kib T] [--pace-ms G] [--ws-clients W]
#include "soak_keys.hpp"
#include "soak_run.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

bool parse_flags(int argc, char** argv, int first, soak::RunOptions& opt) {
  for (int i = first; i < argc; i += 2) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "soak client: \"%s\" needs a value\n", argv[i]);
      return false;
    }
    const char* v = argv[i + 1];
    long long n = std::atoll(v);
    if (flag == "--port") {
      opt.port = static_cast<int>(n);
    } else if (flag == "--pid") {
      opt.pid = static_cast<int>(n);
    } else if (flag == "--pool-file") {
      opt.pool_file = v;
    } else if (flag == "--upstream-port") {
      opt.upstream_port = static_cast<int>(n);
    } else if (flag == "--minutes") {
      opt.load_seconds = static_cast<int>(std::atof(v) * 60);
    } else if (flag == "--warmup-seconds") {
      opt.warmup_seconds = static_cast<int>(n);
    } else if (flag == "--concurrency") {
      opt.concurrency = static_cast<int>(n);
    } else if (flag == "--seed") {
      opt.seed = static_cast<std::uint64_t>(n);
    } else if (flag == "--reload-seconds") {
      opt.reload_seconds = static_cast<int>(n);
    } else if (flag == "--rss-tolerance-kib") {
      opt.rss_tolerance_kib = n;
    } else if (flag == "--ws-clients") {
      opt.ws_clients = static_cast<int>(n);
    } else if (flag == "--pace-ms") {
      opt.pace_ms = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "soak client: unknown flag \"%s\"\n", argv[i]);
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  soak::RunOptions opt;
  if (argc >= 3 && std::string_view(argv[1]) == "init-pool") {
    opt.pool_file = argv[2];
    if (!parse_flags(argc, argv, 3, opt) || opt.upstream_port <= 0) {
      return 2;
    }
    return soak::KeyBook(opt).write() ? 0 : 1;
  }
  if (argc < 2 || std::string_view(argv[1]) != "run" || !parse_flags(argc, argv, 2, opt) || opt.port <= 0 ||
      opt.pid <= 0 || opt.pool_file.empty() || opt.upstream_port <= 0 || opt.concurrency <= 0 ||
      opt.concurrency > 1024 || opt.ws_clients < 0 || opt.ws_clients > opt.concurrency) {
    std::fprintf(stderr, "usage: bench_soak_client run --port K --pid P --pool-file FILE --upstream-port U "
                         "[--minutes M] [--concurrency C] ...\n");
    return 2;
  }
  return soak::run_soak(opt);
}
