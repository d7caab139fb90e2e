// keyshim demo: the whole point of keyshim in ten seconds, with no keys and
// no network. A simulated provider rejects the first two demo keys (429,
// 401) and streams from the third; keyshim runs in-process in front of it;
// one streamed request shows the failover, then /status shows what keyshim
// learned about each key. It keeps serving so the user can try it with curl.
#include "cli/commands.hpp"
#include "cli/status_table.hpp"
#include "server/demo_provider.hpp"
#include "server/local_client.hpp"
#include "server/shim_server.hpp"
#include "server/signal_watcher.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace keyshim::cli {
namespace {

using namespace std::chrono_literals;

struct DemoFlags {
  std::string listen = k_default_listen;
  bool once = false;
};

constexpr const char* k_team_key = "demo-healthy-team-0004";
constexpr const char* k_team_path = "/team/v1/chat/completions";

constexpr const char* k_request_body =
    R"({"model":"demo","stream":true,"messages":[{"role":"user","content":"hi"}]})";

// Short timeouts keep the demo snappy and its exit quick.
std::string demo_pool(const std::string& provider_url) {
  std::string text = fmt::format("[server]\ndrain_timeout = \"2s\"\n\n[upstream]\nbase_url = \"{}\"\n"
                                 "strategy = \"ordered\"\nconnect_timeout = \"2s\"\n"
                                 "first_byte_timeout = \"10s\"\nidle_timeout = \"10s\"\n",
                                 provider_url);
  for (const server::DemoKey& key : server::demo_keys()) {
    text += fmt::format("\n[[keys]]\nlabel = \"{}\"\nkey = \"{}\"\n", key.label, key.secret);
  }
  // A second pool with a key of its own, served at /team: one keyshim for
  // several upstreams (here the same simulated one).
  text += fmt::format("\n[pools.team]\nbase_url = \"{}\"\nconnect_timeout = \"2s\"\n\n[[pools.team.keys]]\n"
                      "label = \"team\"\nkey = \"{}\"\n",
                      provider_url, k_team_key);
  return text;
}

// Holds keyshim's log lines while the demo narrates, so they come out as one
// block after the stream instead of interleaved with it.
class LogHold {
public:
  LogHold() {
    util::Logger::instance().set_sink([this](std::string_view line) {
      std::lock_guard lock(m_mutex);
      m_text += line;
      m_changed.notify_all();
    });
  }
  ~LogHold() { release(); }
  LogHold(const LogHold&) = delete;
  LogHold& operator=(const LogHold&) = delete;

  // The request line is written once the response has ended, which can be
  // just after the client saw its end: wait for it, briefly.
  bool wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_mutex);
    return m_changed.wait_for(lock, timeout, [&] { return m_text.find(needle) != std::string::npos; });
  }
  // Back to stderr; returns what was held.
  std::string release() {
    util::Logger::instance().set_sink(nullptr);
    std::lock_guard lock(m_mutex);
    return std::exchange(m_text, "");
  }

private:
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::string m_text;
};

// Bind the requested address; when that fails (another keyshim on 8787,
// most likely), any free port will do for a demo.
std::unique_ptr<server::ShimServer> start_shim(server::ServeOptions options) {
  auto shim = std::make_unique<server::ShimServer>(options);
  shim->load();
  std::string error;
  if (shim->bind(error)) {
    return shim;
  }
  if (options.listen->port == 0) {
    throw std::runtime_error(error);
  }
  fmt::print("cannot listen on {} (another keyshim there?), so the demo uses a free port instead\n",
             options.listen->text());
  options.listen->port = 0;
  shim = std::make_unique<server::ShimServer>(options);
  shim->load();
  if (!shim->bind(error)) {
    throw std::runtime_error(error);
  }
  return shim;
}

// Turns SSE bytes as they arrive into the text of each `delta.content`.
class DeltaPrinter {
public:
  void feed(const char* data, std::size_t size) {
    m_pending.append(data, size);
    std::size_t end = 0;
    while ((end = m_pending.find('\n')) != std::string::npos) {
      std::string line = m_pending.substr(0, end);
      m_pending.erase(0, end + 1);
      print_line(line);
    }
  }
  const std::string& text() const { return m_text; }

private:
  void print_line(const std::string& line) {
    if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") {
      return;
    }
    std::optional<util::Json> event = util::parse_json(line.substr(6));
    const util::Json* choices = event ? event->find("choices") : nullptr;
    if (!choices || choices->items().empty()) {
      return;
    }
    const util::Json* delta = choices->items().front().find("delta");
    std::optional<std::string> content = delta ? delta->string_at("content") : std::nullopt;
    if (content) {
      m_text += *content;
      fmt::print("{}", *content);
      std::fflush(stdout);
    }
  }

  std::string m_pending;
  std::string m_text;
};

// One streamed chat completion through keyshim, printed as it arrives.
void stream_one_completion(const config::ListenAddress& keyshim) {
  fmt::print("POST /v1/chat/completions (stream) through keyshim, with a placeholder key:\n\n  ");
  std::fflush(stdout);
  DeltaPrinter printer;
  server::LocalResponse response = server::local_post_stream(
      keyshim, "/v1/chat/completions", k_request_body, "",
      [&printer](std::string_view bytes) { printer.feed(bytes.data(), bytes.size()); });
  fmt::print("\n\n");
  if (response.status == 0) {
    throw std::runtime_error(fmt::format("demo: the request through keyshim failed: {}", response.error));
  }
  if (response.status != 200 || printer.text().empty()) {
    throw std::runtime_error(
        fmt::format("demo: keyshim answered {} instead of a stream: {}", response.status, response.body));
  }
}

// The same request through the second pool: its own key answers at once.
void ask_second_pool(const config::ListenAddress& keyshim) {
  std::size_t bytes = 0;
  server::LocalResponse response = server::local_post_stream(
      keyshim, k_team_path, k_request_body, "", [&bytes](std::string_view piece) { bytes += piece.size(); });
  if (response.status != 200) {
    throw std::runtime_error(fmt::format("demo: pool team answered {}: {}", response.status,
                                         response.status == 0 ? response.error : response.body));
  }
  fmt::print("POST {} goes to the second pool, \"team\", and its own key: {}, {} bytes streamed\n\n",
             k_team_path, response.status, bytes);
}

std::string indented(const std::string& lines) {
  std::string out;
  std::size_t start = 0;
  while (start < lines.size()) {
    std::size_t end = std::min(lines.find('\n', start), lines.size());
    out += "  " + lines.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

const util::Json::Array k_no_items;

// What each key got, in the order keyshim tried them, from /status.
void print_failover(const util::Json& status) {
  std::vector<std::string> chain;
  std::string details;
  const util::Json* pools = status.find("pools");
  if (pools == nullptr || pools->items().empty() || pools->items().front().find("keys") == nullptr) {
    throw std::runtime_error("demo: /status lists no pool");
  }
  for (const util::Json& key : pools->items().front().find("keys")->items()) {
    std::string label = key.string_at("label").value_or("?");
    long long last = json_integer(key, "last_status");
    if (last == 0) {
      continue;
    }
    chain.push_back(fmt::format("{}:{}", label, last));
    std::string state = key.string_at("state").value_or("?");
    std::string reason = key.string_at("reason").value_or("");
    if (state == "cooling") {
      state += fmt::format(
          " for {}", util::format_duration(std::chrono::milliseconds(json_integer(key, "resumes_in_ms"))));
    }
    // A rate limit is the model's: the key stays available for other models.
    const util::Json* models = key.find("models");
    for (const util::Json& model : models ? models->items() : k_no_items) {
      state +=
          fmt::format(", but model {} is cooling on it for {}", model.string_at("model").value_or("?"),
                      util::format_duration(std::chrono::milliseconds(json_integer(model, "resumes_in_ms"))));
      reason = model.string_at("reason").value_or(reason);
    }
    details += fmt::format("  {:<12} {}  -> now {}{}\n", label, last, state,
                           reason.empty() ? "" : fmt::format(" ({})", reason));
  }
  fmt::print("failover chain: {}\n", fmt::join(chain, " \u2192 "));
  fmt::print("{}", details);
  fmt::print("nothing had reached the client before the healthy key answered, so the failover was invisible "
             "to it.\n\n");
}

// Step 4 of the demo: one streamed request through the failover, a second
// pool's request, then what keyshim learned about each key and logged. False
// (with the reason on stderr) when anything of it failed.
bool show_failover(const config::ListenAddress& bound, LogHold& held_log) {
  try {
    stream_one_completion(bound);
    ask_second_pool(bound);
    held_log.wait_for(std::string("POST ") + k_team_path, 2s);
    StatusAnswer answer = fetch_status(InstanceAddress{bound, "", ""});
    if (!answer.ok()) {
      throw std::runtime_error(answer.error);
    }
    print_failover(*answer.json);
    fmt::print("keyshim logged:\n{}\n", indented(held_log.release()));
    fmt::print("keyshim status --listen {}\n{}\n", bound.text(),
               render_status_table(*answer.json, stdout_wants_colour()));
    return true;
  } catch (const std::exception& e) {
    fmt::print(stderr, "keyshim: error: {}\n{}", e.what(), held_log.release());
    return false;
  }
}

int run_demo(const DemoFlags& flags) {
  // 1. Signals first, before any thread exists: Ctrl-C is handled by the
  //    SignalWatcher, which drains keyshim like `serve` does.
  server::SignalWatcher::block_signals();
  util::Logger::instance().set_level(util::LogLevel::info);
  std::string error;
  std::optional<config::ListenAddress> listen = config::parse_listen_address(flags.listen, error);
  if (!listen) {
    throw std::runtime_error(fmt::format("--listen {}: {}", flags.listen, error));
  }

  // 2. The simulated provider.
  server::DemoProvider provider;
  if (!provider.start(error)) {
    throw std::runtime_error(error);
  }
  fmt::print("keyshim demo: no network, no real keys.\nsimulated provider on {} with three demo keys, "
             "tried in order:\n",
             provider.base_url());
  for (const server::DemoKey& key : server::demo_keys()) {
    fmt::print("  {:<12} {}\n", key.label, key.behaviour);
  }

  // 3. keyshim itself, in-process, serving the built-in demo pool.
  LogHold held_log;
  server::ServeOptions options;
  options.config_path = "(built-in demo pool)";
  options.config_text = demo_pool(provider.base_url());
  options.listen = *listen;
  std::unique_ptr<server::ShimServer> shim = start_shim(options);
  const config::ListenAddress bound = shim->listen_address();
  const std::string address = bound.text();
  fmt::print("keyshim listening on http://{}\n\n", address);
  auto signals = std::make_unique<server::SignalWatcher>(*shim);
  std::thread serving([&shim] { shim->serve(); });

  // 4. One streamed request, then what keyshim learned about each key.
  bool ok = show_failover(bound, held_log);

  // 5. Keep serving for curl until Ctrl-C, unless asked to stop here.
  if (ok && !flags.once) {
    fmt::print("try it yourself (keyshim keeps serving the demo until Ctrl-C):\n"
               "  curl -N http://{}/v1/chat/completions -H 'Content-Type: application/json' -d '{}'\n"
               "  keyshim status --listen {}\n",
               address, k_request_body, address);
    std::fflush(stdout);
  } else {
    shim->begin_shutdown();
  }
  serving.join();
  // keyshim keeps idle connections to the provider, whose workers would wait
  // out their keep-alive before stopping: close keyshim's side first.
  signals.reset();
  shim.reset();
  provider.stop();
  return ok ? 0 : 1;
}

} // namespace

Subcommand add_demo(CLI::App& parent) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* app = parent.add_subcommand(
      "demo", "run keyshim against a built-in simulated provider with a demo pool (no keys, no network) "
              "to show failover; serves until Ctrl-C");
  app->add_option("--listen", flags->listen,
                  "ADDR:PORT for the demo keyshim (default " + std::string(k_default_listen) +
                      "; a free port when it is taken)")
      ->type_name("ADDR:PORT");
  app->add_flag("--once", flags->once,
                "exit after showing the failover instead of serving (for scripts and CI)");
  return {app, [flags] { return run_demo(*flags); }};
}

} // namespace keyshim::cli
