// How much keyshim adds: per-event latency of a stream, per-request latency of
// small calls, and the cost of many concurrent streams. Prints numbers; it
// asserts nothing. Everything runs on 127.0.0.1.
//
//   cmake --preset ci && cmake --build --preset ci --target keyshim_bench
//   build/ci/bench/keyshim_bench
#include "support/http_shim.hpp"
#include "util/log.hpp"

#include <httplib.h>

#include <fmt/format.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

using namespace std::chrono;
using keyshim::test::Shim;

namespace {

long long now_ns() {
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

// httplib listens with a backlog of 5; a burst of 200 connections would
// measure SYN retransmits instead of keyshim.
struct WideServer : httplib::Server {
  void widen_backlog() { ::listen(svr_sock_, 1024); }
};

// An upstream whose stream events carry the time they were written.
class TimestampUpstream {
public:
  TimestampUpstream() {
    m_server.set_tcp_nodelay(true);
    m_server.new_task_queue = [] { return new httplib::ThreadPool(300); };
    m_server.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.body.find("\"stream\":true") == std::string::npos) {
        res.set_content(R"({"id":"x","choices":[]})", "application/json");
        return;
      }
      auto sent = std::make_shared<int>(0);
      res.set_chunked_content_provider("text/event-stream",
                                       [this, sent](std::size_t, httplib::DataSink& sink) {
                                         if (*sent == m_events) {
                                           sink.write("data: [DONE]\n\n", 14);
                                           sink.done();
                                           return true;
                                         }
                                         std::this_thread::sleep_for(m_gap);
                                         std::string event = fmt::format("data: {}\n\n", now_ns());
                                         ++*sent;
                                         return sink.write(event.data(), event.size());
                                       });
    });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_server.widen_backlog();
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
  }
  ~TimestampUpstream() {
    m_server.stop();
    m_thread.join();
  }
  int port() const { return m_port; }
  int m_events = 50;
  milliseconds m_gap{5};

private:
  WideServer m_server;
  int m_port = 0;
  std::thread m_thread;
};

// Latencies (ns) of each event from write at the upstream to read by the client.
std::vector<long long> stream_latencies(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_tcp_nodelay(true);
  client.set_read_timeout(60, 0);
  std::vector<long long> out;
  std::string pending;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = R"({"stream":true})";
  req.headers = {{"Content-Type", "application/json"}};
  req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
    long long arrived = now_ns();
    pending.append(data, n);
    std::size_t end;
    while ((end = pending.find("\n\n")) != std::string::npos) {
      std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event.rfind("data: ", 0) == 0 && event != "data: [DONE]") {
        out.push_back(arrived - std::stoll(event.substr(6)));
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error;
  client.send(req, res, error);
  return out;
}

double percentile(std::vector<long long> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))]) / 1000.0;
}

std::string proc_status(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return line.substr(field.size() + 1);
    }
  }
  return "?";
}

} // namespace

int main() {
  keyshim::util::Logger::instance().set_level(keyshim::util::LogLevel::error);
  TimestampUpstream upstream;
  std::string upstream_url = fmt::format("http://127.0.0.1:{}", upstream.port());
  Shim shim(keyshim::test::pool_toml(3, "strategy = \"round-robin\"\n"), upstream_url);

  // 1. Per-event latency: direct vs through keyshim.
  std::vector<long long> direct, relayed;
  for (int i = 0; i < 10; ++i) {
    auto d = stream_latencies(upstream.port());
    auto r = stream_latencies(shim.port());
    direct.insert(direct.end(), d.begin(), d.end());
    relayed.insert(relayed.end(), r.begin(), r.end());
  }
  fmt::print("stream event latency (us), {} events each:\n", direct.size());
  fmt::print("  direct    p50 {:8.1f}  p99 {:8.1f}\n", percentile(direct, 0.5), percentile(direct, 0.99));
  fmt::print("  keyshim   p50 {:8.1f}  p99 {:8.1f}\n", percentile(relayed, 0.5), percentile(relayed, 0.99));
  fmt::print("  added     p50 {:8.1f}\n", percentile(relayed, 0.5) - percentile(direct, 0.5));

  // 2. Small requests on one keep-alive connection.
  for (int port : {upstream.port(), shim.port()}) {
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    constexpr int k_requests = 2000;
    auto start = steady_clock::now();
    for (int i = 0; i < k_requests; ++i) {
      client.Post("/v1/chat/completions", "{}", "application/json");
    }
    double seconds = duration<double>(steady_clock::now() - start).count();
    fmt::print("{} small requests {}: {:.0f} req/s, {:.1f} us each\n", k_requests,
               port == shim.port() ? "through keyshim" : "direct", k_requests / seconds,
               seconds * 1e6 / k_requests);
  }

  // 3. Many concurrent streams.
  constexpr int k_streams = 200;
  upstream.m_events = 20;
  upstream.m_gap = milliseconds(50);
  std::atomic<int> complete{0};
  auto start = steady_clock::now();
  std::vector<std::thread> clients;
  for (int i = 0; i < k_streams; ++i) {
    clients.emplace_back([&] {
      if (stream_latencies(shim.port()).size() == 20) {
        ++complete;
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(500)); // sample mid-flight, not a synchronisation
  std::string threads = proc_status("Threads");
  std::string rss = proc_status("VmRSS");
  for (auto& t : clients) {
    t.join();
  }
  fmt::print(
      "{} concurrent streams of 20 events at 50 ms: {} complete in {:.2f}s; mid-flight threads {}, RSS{}\n",
      k_streams, complete.load(), duration<double>(steady_clock::now() - start).count(), threads, rss);
  fmt::print("(one process holds the upstream, keyshim and the clients)\n");
  return 0;
}
