// keyshim run -- COMMAND...: runs COMMAND with the variables `keyshim env`
// prints, like `op run` and `aws-vault exec`, so `keyshim run -- claude`
// just works. It uses the keyshim answering on the pool file's address, or
// starts one in-process for the command's lifetime and drains it afterwards.
#include "cli/child_command.hpp"
#include "cli/commands.hpp"
#include "cli/gemini_home.hpp"
#include "cli/run_lock.hpp"
#include "cli/status_table.hpp"
#include "cli/tool_arguments.hpp"
#include "cli/tool_variables.hpp"
#include "config/loader.hpp"
#include "server/shim_server.hpp"
#include "util/log.hpp"
#include "util/process_memory.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace keyshim::cli {
namespace {

struct RunFlags {
  std::string config;
  std::vector<std::string> command;
  bool verbose = false;
};

// The command's environment: keyshim's own, minus every variable a key_env
// names (a pool key must not reach the command that way either), with the
// tool variables set over whatever was there.
std::vector<std::string> child_environment(const config::Config& config,
                                           const std::vector<ToolVariable>& variables) {
  std::vector<std::string> dropped;
  for (const config::PoolConfig& pool : config.pools) {
    for (const config::KeyConfig& key : pool.keys) {
      if (key.source.rfind("key_env ", 0) == 0) {
        dropped.push_back(key.source.substr(8));
      }
    }
  }
  for (const ToolVariable& variable : variables) {
    dropped.push_back(variable.name);
  }
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    if (std::find(dropped.begin(), dropped.end(), name) == dropped.end()) {
      out.push_back(std::move(text));
    }
  }
  for (const ToolVariable& variable : variables) {
    out.push_back(variable.name + "=" + variable.value);
  }
  return out;
}

// gemini-cli needs its settings to select API-key auth (see GeminiHome); only
// for a keyshim with a Gemini pool.
std::unique_ptr<GeminiHome> private_gemini_home(const std::vector<std::string>& argv,
                                                const std::vector<ToolVariable>& variables) {
  bool serves_gemini = std::any_of(variables.begin(), variables.end(), [](const ToolVariable& variable) {
    return variable.name == "GOOGLE_GEMINI_BASE_URL";
  });
  if (!serves_gemini) {
    return nullptr;
  }
  const char* own = std::getenv("GEMINI_CLI_HOME");
  const char* home = own != nullptr && *own != '\0' ? own : std::getenv("HOME");
  std::string problem;
  std::unique_ptr<GeminiHome> made = GeminiHome::prepare(argv, home == nullptr ? "" : home, problem);
  if (!problem.empty()) {
    util::log_warn("gemini may refuse to start without API-key auth selected: {}", problem);
  }
  return made;
}

int run_with(const RunFlags& flags, const config::Config& config, const std::string& listen,
             const ChildSignals& signals) {
  std::vector<ToolVariable> variables = tool_variables(&config, listen);
  std::vector<std::string> argv = with_tool_arguments(flags.command, tool_arguments(variables));
  std::unique_ptr<GeminiHome> gemini_home = private_gemini_home(argv, variables);
  if (gemini_home) {
    variables.push_back({"GEMINI_CLI_HOME", gemini_home->path()});
  }
  return run_child_command(argv, child_environment(config, variables), signals);
}

// The command's own keyshim: started on the file's address, serving on a
// thread while the command runs, then drained like `serve` on SIGTERM.
int run_with_own_keyshim(const RunFlags& flags, const config::Config& config, const std::string& path,
                         const ChildSignals& signals, RunLock* lock) {
  // 1. Quiet unless asked: the command owns the terminal.
  util::Logger::instance().set_level(flags.verbose ? util::LogLevel::info : util::LogLevel::warn);
  if (std::string problem = util::protect_process_memory(); !problem.empty()) {
    util::log_warn("keys in memory are less protected: {}", problem);
  }

  // 2. Load the pool, key_cmd and all. Unlike serve, an unusable file is an
  //    error: a keyshim that answers only 503s would help no command.
  std::vector<int> inherited = open_descriptors();
  server::ServeOptions options;
  options.config_path = path;
  auto shim = std::make_unique<server::ShimServer>(options);
  shim->load();
  if (!shim->state()->config) {
    throw std::runtime_error(shim->state()->problem);
  }
  std::string error;
  if (!shim->bind(error)) {
    // Another `keyshim run` may have started one in the meantime.
    if (fetch_status(instance_of(config)).ok()) {
      shim.reset();
      return run_with(flags, config, config.server.listen.text(), signals);
    }
    throw std::runtime_error(error);
  }
  const std::string listen = shim->listen_address().text();
  util::log_info("keyshim listening on http://{} for {} (pool file {})", listen, flags.command.front(), path);
  keep_descriptors_from_child(inherited);

  // 3. Serve while the command runs.
  std::promise<void> served;
  std::future<void> drained = served.get_future();
  std::thread serving([&shim, &served] {
    shim->serve();
    served.set_value();
  });
  int code = run_with(flags, config, listen, signals);

  // 4. Other runs may use this keyshim too: serve until the last is done.
  if (lock != nullptr) {
    lock->wait_until_alone([&] {
      fmt::print(stderr,
                 "keyshim: {} exited; serving on {} until the other `keyshim run` using it exit (Ctrl-C "
                 "stops it now)\n",
                 flags.command.front(), listen);
    });
  }

  // 5. Drain: what the command left in flight gets drain_timeout, then is cut.
  shim->begin_shutdown();
  if (drained.wait_for(shim->drain_timeout()) == std::future_status::timeout) {
    util::log_warn("drain timeout reached: cutting {} in-flight requests", shim->in_flight());
    shim->abort_in_flight();
  }
  serving.join();
  return code;
}

int run_run(const RunFlags& flags) {
  // 1. Signals first, before any thread: keyshim must outlive the command.
  ChildSignals signals = block_child_signals();

  // 2. The pool file without its secrets: asking whether a keyshim answers
  //    must not run key_cmd.
  std::string path = resolve_config_path(flags.config);
  config::LoadResult loaded = config::load_pool_file(path, config::SecretResolution::skip);
  if (!loaded.ok()) {
    std::size_t more = loaded.problems.size() - 1;
    throw std::runtime_error(fmt::format("{}{}; see `keyshim check -c {}`", loaded.problems.front().text(),
                                         more == 0 ? std::string() : fmt::format(" (and {} more)", more),
                                         path));
  }
  const config::Config& config = *loaded.config;

  // 3. Every run on this address holds the run lock while it runs (see
  //    run_lock.hpp), so that a keyshim one of them started lives as long as
  //    any of them.
  std::string problem;
  std::optional<RunLock> lock = RunLock::attach(config.server.listen, problem);
  if (!lock && problem.empty()) {
    return 128 + SIGINT; // interrupted while a keyshim another run started drained
  }
  if (!lock) {
    util::log_warn("{}: a keyshim this run starts stops when its command exits, even while another "
                   "`keyshim run` uses it",
                   problem);
  }

  // 4. A keyshim already answering on the file's address serves the command.
  //    Nothing answering means we start one; anything else answering is an
  //    error, with fetch_status's explanation.
  StatusAnswer answer = fetch_status(instance_of(config));
  if (answer.ok()) {
    return run_with(flags, config, config.server.listen.text(), signals);
  }
  if (!answer.refused) {
    throw std::runtime_error(fmt::format("cannot run {}: {}", flags.command.front(), answer.error));
  }
  return run_with_own_keyshim(flags, config, path, signals, lock ? &*lock : nullptr);
}

} // namespace

Subcommand add_run(CLI::App& parent) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* app = parent.add_subcommand(
      "run", "run COMMAND with the variables `keyshim env` prints, starting keyshim for its lifetime when "
             "none answers; exits with COMMAND's exit code (127 not found, 126 not executable)");
  add_config_option(*app, flags->config);
  app->add_flag("-v,--verbose", flags->verbose, "log keyshim's requests to stderr (default: warnings only)");
  app->add_option("command", flags->command, "the command and its arguments, after --")->required();
  return {app, [flags] { return run_run(*flags); }};
}

} // namespace keyshim::cli
