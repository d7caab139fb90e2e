// bench_loadgen ws: WebSocket round trips through a proxy (loadgen_ws.hpp).
// Beast on one io_context thread with coroutines: C connections, each in a
// loop of write one message, read its echo, time the round trip.
#include "loadgen_ws.hpp"

#include "bench_proc.hpp"
#include "bench_text.hpp"

#include <utility> // before Asio: awaitable.hpp uses std::exchange (NOTES-beast item 7)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Executor = asio::io_context::executor_type;
using TcpStream = beast::basic_stream<tcp, Executor>;
using Clock = std::chrono::steady_clock;

// What all connections share: the window and the results.
struct Run {
  const WsOptions& o;
  Clock::time_point start; // the window opens
  Clock::time_point end;   // and closes
  std::vector<uint64_t> rtt_ns;
  long messages = 0;
  long errors = 0;
  long handshake_failed = 0;
  int handshake_status = 0;
  int open = 0; // connections still running
};

// Handshake; false (and the refusal counted) when the server declined.
asio::awaitable<bool> handshake(websocket::stream<TcpStream>& ws, Run& run) {
  beast::error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);
  tcp::endpoint to(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(run.o.port));
  beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(10));
  co_await beast::get_lowest_layer(ws).async_connect(to, tok);
  if (!ec) {
    beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true), ec);
    websocket::response_type res;
    co_await ws.async_handshake(res, "127.0.0.1:" + std::to_string(run.o.port), run.o.path, tok);
    if (ec) {
      run.handshake_failed++;
      run.handshake_status = static_cast<int>(res.result_int());
    }
  } else {
    run.errors++;
  }
  beast::get_lowest_layer(ws).expires_never();
  co_return !ec;
}

asio::awaitable<void> client(asio::io_context& io, Run& run) {
  websocket::stream<TcpStream> ws(io);
  ws.auto_fragment(false);
  ws.read_message_max(64 * 1024 * 1024);
  if (co_await handshake(ws, run)) {
    beast::error_code ec;
    auto tok = asio::redirect_error(asio::use_awaitable, ec);
    std::string msg(run.o.size, 'm');
    beast::flat_buffer buf;
    ws.text(true);
    for (auto now = Clock::now(); now < run.end; now = Clock::now()) {
      co_await ws.async_write(asio::buffer(msg), tok);
      if (!ec) {
        co_await ws.async_read(buf, tok);
      }
      if (ec || buf.size() != msg.size()) {
        run.errors++;
        break;
      }
      buf.consume(buf.size());
      auto done = Clock::now();
      if (now >= run.start && done <= run.end) {
        run.messages++;
        run.rtt_ns.push_back(static_cast<uint64_t>((done - now).count()));
      }
    }
    if (!ec) {
      co_await ws.async_close(websocket::close_code::normal, tok);
    }
  }
  run.open--;
}

} // namespace

int run_ws(const WsOptions& o) {
  asio::io_context io(1);
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  Run run{o, Clock::now() + seconds(o.warmup), Clock::now() + seconds(o.warmup + o.seconds), {}, 0, 0, 0, 0,
          0};
  // The proxy's CPU when the window opens and when it closes.
  double cpu0 = 0;
  double cpu1 = -1;
  asio::steady_timer at_start(io, run.start);
  at_start.async_wait([&](beast::error_code) { cpu0 = proc_info(o.pids, false).cpu_s; });
  asio::steady_timer at_end(io, run.end);
  at_end.async_wait([&](beast::error_code) { cpu1 = proc_info(o.pids, false).cpu_s; });
  bool in_time = true;
  asio::steady_timer bound(io, seconds(o.timeout));
  bound.async_wait([&](beast::error_code e) {
    if (!e) {
      in_time = false;
      io.stop();
    }
  });
  for (int i = 0; i < o.conns; i++) {
    run.open++;
    asio::co_spawn(io, client(io, run), asio::detached);
  }
  // Runs until every client is done (then only the timers are left).
  while (run.open > 0 && !io.stopped()) {
    io.run_one();
  }
  if (Clock::now() < run.end) {
    cpu1 = cpu0 = 0; // ended early (every handshake refused, errors): no CPU figure
  } else if (cpu1 < 0) {
    cpu1 = proc_info(o.pids, false).cpu_s; // the clients ended before the timer's turn
  }
  double window = o.seconds;
  double cpu = cpu1 - cpu0;
  printf("conns=%d size=%zu messages=%ld msgs_per_s=%.0f rtt_p50_us=%.1f rtt_p99_us=%.1f cpu_s=%.3f "
         "cpu_us_per_msg=%.2f handshake_failed=%ld handshake_status=%d errors=%ld complete=%d\n",
         o.conns, o.size, run.messages, static_cast<double>(run.messages) / window,
         static_cast<double>(pct(run.rtt_ns, 0.5)) / 1e3, static_cast<double>(pct(run.rtt_ns, 0.99)) / 1e3,
         cpu, run.messages > 0 ? cpu * 1e6 / static_cast<double>(run.messages) : 0.0, run.handshake_failed,
         run.handshake_status, run.errors, in_time ? 1 : 0);
  return 0;
}
