// keyshim log: the exchanges a running instance captured, one line each,
// and with --follow the new ones as they come (polled once a second with
// `after=`), until Ctrl-C or until the instance goes away.
#include "cli/capture_client.hpp"
#include "cli/capture_text.hpp"
#include "cli/commands.hpp"
#include "cli/status_table.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace keyshim::cli {
namespace {

struct LogFlags {
  std::string config;
  std::string listen;
  std::string pool;
  std::optional<int> status;
  bool follow = false;
};

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
  g_interrupted = 1;
}

// Prints the entries after `after` and returns the last id printed (or
// `after`). A gap means the ring dropped entries before they were asked for.
std::uint64_t print_entries(const util::Json& list, std::uint64_t after) {
  const util::Json* entries = list.find("entries");
  for (const util::Json& entry : entries ? entries->items() : util::Json::Array{}) {
    std::uint64_t id = entry.find("id") ? entry.find("id")->as_unsigned().value_or(0) : 0;
    fmt::print("{}\n", capture_log_line(entry));
    after = std::max(after, id);
  }
  std::fflush(stdout);
  return after;
}

// The newest id the ring gave, so that a filtered follow does not ask again
// for what it filtered out.
std::uint64_t newest_id(const util::Json& list, std::uint64_t fallback) {
  const util::Json* last = list.find("last_id");
  return last ? std::max(fallback, last->as_unsigned().value_or(0)) : fallback;
}

// Waits a second in short steps, so that Ctrl-C ends it at once.
void pause_a_second() {
  for (int i = 0; i < 10 && !g_interrupted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int follow(const InstanceAddress& instance, const LogFlags& flags, std::uint64_t after) {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  while (!g_interrupted) {
    pause_a_second();
    if (g_interrupted) {
      break;
    }
    CaptureAnswer answer = fetch_captures(instance, captures_path(after, flags.pool, flags.status));
    if (!answer.ok()) {
      fmt::print(stderr, "keyshim: stopped following: {}\n",
                 answer.refused ? fmt::format("the keyshim on {} went away", instance.listen.text())
                                : answer.error);
      return 1;
    }
    after = newest_id(*answer.json, print_entries(*answer.json, after));
  }
  return 0;
}

int run_log(const LogFlags& flags) {
  InstanceAddress instance = locate_instance(flags.config, flags.listen);
  CaptureAnswer answer = fetch_captures(instance, captures_path(0, flags.pool, flags.status));
  if (!answer.ok()) {
    throw std::runtime_error(answer.error);
  }
  std::uint64_t after = newest_id(*answer.json, print_entries(*answer.json, 0));
  if (!flags.follow) {
    return 0;
  }
  return follow(instance, flags, after);
}

} // namespace

Subcommand add_log(CLI::App& parent) {
  auto flags = std::make_shared<LogFlags>();
  CLI::App* app = parent.add_subcommand(
      "log", "list the exchanges the running keyshim captured (its pools' `capture` setting), one line "
             "each: id, time, pool, model, request, status, attempts, duration");
  add_config_option(*app, flags->config);
  app->add_option("--listen", flags->listen,
                  "ADDR:PORT of the instance to ask (default: the pool file's [server] listen, else " +
                      std::string(k_default_listen) + ")")
      ->type_name("ADDR:PORT");
  app->add_option("--pool", flags->pool, "only the exchanges of pool NAME")->type_name("NAME");
  app->add_option("--status", flags->status, "only the exchanges whose client got this status")
      ->type_name("N")
      ->check(CLI::Range(0, 999));
  app->add_flag("-f,--follow", flags->follow,
                "keep printing new exchanges as they are captured, until Ctrl-C or the instance stops");
  return {app, [flags] { return run_log(*flags); }};
}

} // namespace keyshim::cli
