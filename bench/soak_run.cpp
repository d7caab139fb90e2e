// The soak run: see soak_run.hpp.
#include "soak_run.hpp"

#include "soak_keys.hpp"
#include "soak_stream.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace soak {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int k_stream_timeout_s = 30;
// Each reload sets the pool's max_concurrent to the next of these (small
// enough that requests wait for a key) and replaces one key by a new one.
constexpr int k_concurrency_cycle[] = {8, 2, 1, 4, 1, 3};
// keyshim closes an idle pooled upstream connection only when it next looks
// for one and finds it older than 20 s; a quiet moment must outlast that.
constexpr auto k_idle_pool_age = 21s;
constexpr std::size_t k_max_kept_details = 20;

struct Stats {
  std::atomic<std::uint64_t> outcomes[5] = {};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> reloads{0};
  std::atomic<std::uint64_t> unconfirmed_reloads{0};
  std::atomic<std::uint64_t> waited{0};
  std::atomic<std::uint64_t> wait_503{0};
  std::atomic<std::uint64_t> ws_sessions{0};
  std::atomic<std::uint64_t> ws_messages{0};
  std::atomic<std::uint64_t> statuses[600] = {};
  std::mutex mutex;
  std::vector<std::string> details;

  void add(const StreamPlan& plan, const StreamResult& r) {
    ++outcomes[static_cast<int>(r.outcome)];
    bytes += r.bytes;
    waited += r.waited;
    wait_503 += r.wait_503;
    ws_sessions += plan.kind == Kind::ws;
    ws_messages += r.messages;
    if (r.status > 0 && r.status < 600) {
      ++statuses[r.status];
    }
    if (r.outcome == Outcome::violation) {
      std::lock_guard lock(mutex);
      if (details.size() < k_max_kept_details) {
        details.push_back("stream " + std::to_string(plan.id) + " (" + std::string(kind_name(plan.kind)) +
                          ", seed " + std::to_string(plan.seed) + ", status " + std::to_string(r.status) +
                          "): " + r.detail);
      }
    }
  }
  std::uint64_t count(Outcome o) const { return outcomes[static_cast<int>(o)]; }
};

struct Sample {
  long long rss_kib = -1;
  long long fds = -1;
};

Sample sample(int pid) {
  Sample s;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      s.rss_kib = std::atoll(line.c_str() + 6);
    }
  }
  if (DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    s.fds = 0;
    while (dirent* e = ::readdir(dir)) {
      s.fds += e->d_name[0] != '.';
    }
    ::closedir(dir);
  }
  return s;
}

// The fault mix: mostly healthy streams, every fault of the matrix often
// enough to occur thousands of times in an hour.
Kind pick_kind(SplitMix& rng) {
  static constexpr std::pair<Kind, int> k_weights[] = {
      {Kind::sse, 40},        {Kind::json, 10},        {Kind::reset_head, 5},   {Kind::stall_first, 2},
      {Kind::error_event, 5}, {Kind::rate_limited, 5}, {Kind::unauthorized, 1}, {Kind::server_errors, 4},
      {Kind::reset_mid, 5},   {Kind::stall_mid, 2},    {Kind::short_body, 5},   {Kind::broken_chunk, 5}};
  std::uint64_t roll = rng.below(89);
  for (const auto& [kind, weight] : k_weights) {
    if (roll < static_cast<std::uint64_t>(weight)) {
      // A 401 disables a key until the next key rotation: keep it rare.
      return kind == Kind::unauthorized && rng.below(20) != 0 ? Kind::sse : kind;
    }
    roll -= static_cast<std::uint64_t>(weight);
  }
  return Kind::sse;
}

StreamPlan make_plan(SplitMix& rng, std::uint64_t id, bool websocket) {
  StreamPlan plan;
  plan.kind = websocket ? Kind::ws : pick_kind(rng);
  plan.id = id;
  plan.seed = rng.next() >> 1;
  std::uint64_t roll = rng.below(100);
  if (roll < 4) {
    plan.hangup = Hangup::streaming;
    plan.hangup_after = rng.below(3000);
  } else if (roll < 6) {
    plan.hangup = Hangup::waiting;
    plan.hangup_after = rng.below(1500);
  } else if (roll < 8) {
    plan.hangup = Hangup::uploading;
    plan.hangup_after = rng.below(300);
  }
  return plan;
}

class Load {
public:
  Load(const RunOptions& opt, Stats& stats, KeyBook& keys) : m_opt(opt), m_stats(stats), m_keys(keys) {}

  // Streams from `concurrency` clients and reloads now and then, for `seconds`.
  void run(int seconds, std::atomic<std::uint64_t>& next_id) {
    m_until = Clock::now() + std::chrono::seconds(seconds);
    std::vector<std::thread> clients;
    for (int i = 0; i < m_opt.concurrency; ++i) {
      clients.emplace_back([this, i, &next_id] { client(i, next_id); });
    }
    reloader();
    for (auto& t : clients) {
      t.join();
    }
  }

private:
  void client(int index, std::atomic<std::uint64_t>& next_id) {
    SplitMix rng{m_opt.seed * 1000003u + static_cast<std::uint64_t>(index) + next_id.load()};
    while (Clock::now() < m_until) {
      // The last ws_clients clients open WebSockets only.
      StreamPlan plan = make_plan(rng, next_id++, index >= m_opt.concurrency - m_opt.ws_clients);
      StreamResult result = run_stream(m_opt.port, plan, k_stream_timeout_s, m_keys);
      m_stats.add(plan, result);
      if (result.outcome == Outcome::error_status || result.outcome == Outcome::hung_up) {
        std::this_thread::sleep_for(200ms); // fast answers: do not spin
      }
      if (m_opt.pace_ms > 0) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(rng.below(static_cast<std::uint64_t>(m_opt.pace_ms))));
      }
    }
  }

  // Every reload_seconds: a new max_concurrent from the cycle and one key
  // replaced by a new one (so a key the 401 fault disabled comes back, and
  // old keys are dropped while requests wait), then SIGHUP, confirmed by
  // keyshim's config generation.
  void reloader() {
    int round = 0;
    while (Clock::now() + std::chrono::seconds(m_opt.reload_seconds) < m_until) {
      std::this_thread::sleep_for(std::chrono::seconds(m_opt.reload_seconds));
      m_keys.set_max_concurrent(k_concurrency_cycle[round % std::size(k_concurrency_cycle)]);
      m_keys.replace(round % k_keys);
      ++round;
      m_keys.write();
      m_stats.unconfirmed_reloads += !m_keys.reload_and_confirm();
      ++m_stats.reloads;
    }
  }

  const RunOptions& m_opt;
  Stats& m_stats;
  KeyBook& m_keys;
  Clock::time_point m_until;
};

// A quiet moment: every stream is over, keyshim's pooled upstream
// connections are stale and closed by one probe answered "Connection:
// close", and the descriptor count has settled. Then one sample.
Sample quiet_sample(const RunOptions& opt, KeyBook& keys, std::atomic<std::uint64_t>& next_id) {
  keys.set_max_concurrent(8);
  keys.replace_all(); // fresh keys: none disabled or cooling
  keys.write();
  if (!keys.reload_and_confirm()) {
    std::fprintf(stderr, "soak: keyshim did not confirm the quiet-time reload\n");
  }
  std::this_thread::sleep_for(k_idle_pool_age);
  bool probed = false;
  for (int i = 0; i < 20 && !probed; ++i) {
    StreamPlan plan{Kind::probe, next_id++, 7, Hangup::none, 0};
    probed = run_stream(opt.port, plan, k_stream_timeout_s, keys).outcome == Outcome::completed;
    if (!probed) {
      std::this_thread::sleep_for(500ms);
    }
  }
  if (!probed) {
    std::fprintf(stderr, "soak: the quiet-time probe never completed\n");
  }
  Sample last = sample(opt.pid);
  for (int stable = 0, i = 0; stable < 10 && i < 300; ++i) {
    std::this_thread::sleep_for(100ms);
    Sample now = sample(opt.pid);
    stable = now.fds == last.fds ? stable + 1 : 0;
    last = now;
  }
  return last;
}

void print_summary(const RunOptions& opt, const Stats& warm, const Stats& stats, Sample start, Sample end) {
  auto count = [](std::uint64_t n) { return static_cast<unsigned long long>(n); };
  std::printf("soak summary (%d s of load, %d clients, seed %llu, %llu reloads: max_concurrent 8,2,1,4,1,3 "
              "in turn, one key replaced each)\n",
              opt.load_seconds, opt.concurrency, count(opt.seed), count(stats.reloads.load()));
  std::printf("  streams completed byte-identical   %llu\n", count(stats.count(Outcome::completed)));
  std::printf("  streams broken as expected         %llu\n", count(stats.count(Outcome::broken_expected)));
  std::printf("  error statuses before commit       %llu\n", count(stats.count(Outcome::error_status)));
  std::printf("  client hang-ups                    %llu\n", count(stats.count(Outcome::hung_up)));
  std::printf("  violations (incl. warm-up)         %llu\n",
              count(stats.count(Outcome::violation) + warm.count(Outcome::violation)));
  std::printf("  body bytes received                %llu\n", count(stats.bytes.load()));
  std::printf("  healthy streams that waited        %llu (head later than %lld ms)\n",
              count(stats.waited.load()), static_cast<long long>(k_waited.count()));
  std::printf("  keyshim 503s (no key in max_wait)  %llu (each with Retry-After, by max_wait + %lld ms)\n",
              count(stats.wait_503.load()), static_cast<long long>(k_wait_slack.count()));
  std::printf("  websocket sessions                 %llu (%d clients), %llu messages echoed byte-identical\n",
              count(stats.ws_sessions.load()), opt.ws_clients, count(stats.ws_messages.load()));
  std::printf("  reloads not confirmed by keyshim   %llu\n", count(stats.unconfirmed_reloads.load()));
  std::printf("  keyshim RSS KiB start/end          %lld / %lld (tolerance +%lld)\n", start.rss_kib,
              end.rss_kib, opt.rss_tolerance_kib);
  std::printf("  keyshim open fds start/end         %lld / %lld\n", start.fds, end.fds);
  std::printf("  statuses seen                     ");
  for (int s = 0; s < 600; ++s) {
    if (stats.statuses[s] > 0) {
      std::printf(" %d:%llu", s, count(stats.statuses[s].load()));
    }
  }
  std::printf("\n");
  for (const auto& d : warm.details) {
    std::printf("  VIOLATION (warm-up) %s\n", d.c_str());
  }
  for (const auto& d : stats.details) {
    std::printf("  VIOLATION %s\n", d.c_str());
  }
}

} // namespace

int run_soak(const RunOptions& opt) {
  Stats warm;
  Stats stats;
  std::atomic<std::uint64_t> next_id{1};
  KeyBook keys(opt);
  std::printf("soak: warm-up %d s, %d clients\n", opt.warmup_seconds, opt.concurrency);
  std::fflush(stdout);
  Load(opt, warm, keys).run(opt.warmup_seconds, next_id);
  Sample start = quiet_sample(opt, keys, next_id);
  std::printf("soak: start RSS %lld KiB, %lld fds; load %d s\n", start.rss_kib, start.fds, opt.load_seconds);
  std::fflush(stdout);
  Load(opt, stats, keys).run(opt.load_seconds, next_id);
  Sample end = quiet_sample(opt, keys, next_id);
  bool alive = ::kill(opt.pid, 0) == 0;
  print_summary(opt, warm, stats, start, end);
  bool violations = stats.count(Outcome::violation) + warm.count(Outcome::violation) +
                        stats.unconfirmed_reloads + warm.unconfirmed_reloads >
                    0;
  bool leak = end.fds != start.fds || end.rss_kib > start.rss_kib + opt.rss_tolerance_kib || start.fds < 0;
  std::printf("soak: %s\n", !alive       ? "FAIL (keyshim is gone)"
                            : violations ? "FAIL (violations)"
                            : leak       ? "FAIL (RSS or fds grew)"
                                         : "ok");
  return (!alive || violations || leak) ? 1 : 0;
}

} // namespace soak
