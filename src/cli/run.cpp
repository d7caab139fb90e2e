// keyshim run -- COMMAND...: runs COMMAND with the variables `keyshim env`
// prints, like `op run` and `aws-vault exec`, so `keyshim run -- claude`
// just works. It uses the keyshim answering on the pool file's address, or
// starts one in-process and drains it once its command and every other run
// using it have exited (run_lock.hpp).
#include "cli/child_command.hpp"
#include "cli/commands.hpp"
#include "cli/gemini_home.hpp"
#include "cli/run_instance.hpp"
#include "cli/run_lock.hpp"
#include "cli/status_table.hpp"
#include "cli/tool_arguments.hpp"
#include "cli/tool_variables.hpp"
#include "config/loader.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
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

// Which keyshim this run's command uses, and this run's part in it.
enum class Role {
  guest,    // one that answered and that no run owns (`keyshim serve`)
  watching, // one another run serves: take over if that run goes
  owner,    // this run's own, serving until every run using it is done
};

struct Session {
  const RunFlags& flags;
  const config::Config& config;
  const std::string& path;
  RunLock* lock; // null when the lock files cannot be used
  Role role = Role::guest;
  RunInstance own;
};

// Serve the address from this run: true when it does, false when another
// keyshim answers there by now (the command then uses that one).
bool serve_here(Session& session) {
  // Taking ownership fails only if another run is starting a keyshim at this
  // very moment; the bind below decides which of the two serves.
  if (session.lock != nullptr) {
    session.lock->take_ownership();
  }
  std::string error;
  if (session.own.start(session.path, error)) {
    session.role = Role::owner;
    util::log_info("keyshim listening on http://{} for {} (pool file {})", session.own.listen(),
                   session.flags.command.front(), session.path);
    return true;
  }
  if (session.lock != nullptr) {
    session.lock->give_up_ownership();
  }
  if (fetch_status(instance_of(session.config)).ok()) {
    return false;
  }
  throw std::runtime_error(error);
}

// Called every second while using a keyshim another run serves: if that
// run is gone (killed, or stopped early), serve the address from here.
void take_over_if_orphaned(Session& session) {
  if (session.role != Role::watching || !session.lock->take_ownership()) {
    return;
  }
  try {
    if (!serve_here(session)) {
      session.role = Role::guest; // a keyshim no run owns answers there now
      return;
    }
    util::log_warn("the keyshim on {} that another `keyshim run` started is gone: serving it from this run",
                   session.own.listen());
  } catch (const std::exception& error) {
    util::log_warn("the keyshim on {} that another `keyshim run` started is gone, and this run cannot "
                   "serve it: {}",
                   session.config.server.listen.text(), error.what());
    session.lock->give_up_ownership(); // another run may manage
    session.role = Role::guest;
  }
}

int run_command(Session& session, const ChildSignals& signals) {
  std::string listen =
      session.role == Role::owner ? session.own.listen() : session.config.server.listen.text();
  std::vector<ToolVariable> variables = tool_variables(&session.config, listen);
  std::vector<std::string> argv = with_tool_arguments(session.flags.command, tool_arguments(variables));
  std::unique_ptr<GeminiHome> gemini_home = private_gemini_home(argv, variables);
  if (gemini_home) {
    variables.push_back({"GEMINI_CLI_HOME", gemini_home->path()});
  }
  std::function<void()> watch;
  if (session.role == Role::watching) {
    watch = [&session] { take_over_if_orphaned(session); };
  }
  return run_child_command(argv, child_environment(session.config, variables), signals, watch);
}

// After the command: a keyshim this run serves keeps serving while other
// runs use it, then drains like `serve` on SIGTERM.
void stop_serving(Session& session) {
  if (session.role != Role::owner) {
    return;
  }
  if (session.lock != nullptr) {
    session.lock->wait_until_alone([&session] {
      fmt::print(stderr,
                 "keyshim: {} exited; serving on {} until the other `keyshim run` using it exit (Ctrl-C "
                 "stops it now)\n",
                 session.flags.command.front(), session.own.listen());
    });
  }
  session.own.stop();
}

// The pool file without its secrets: asking whether a keyshim answers
// must not run key_cmd.
config::LoadResult load_without_secrets(const std::string& path) {
  config::LoadResult loaded = config::load_pool_file(path, config::SecretResolution::skip);
  if (!loaded.ok()) {
    std::size_t more = loaded.problems.size() - 1;
    throw std::runtime_error(fmt::format("{}{}; see `keyshim check -c {}`", loaded.problems.front().text(),
                                         more == 0 ? std::string() : fmt::format(" (and {} more)", more),
                                         path));
  }
  return loaded;
}

int run_run(const RunFlags& flags) {
  // 1. Signals first, before any thread: keyshim must outlive the command.
  //    Quiet unless asked: the command owns the terminal.
  ChildSignals signals = block_child_signals();
  util::Logger::instance().set_level(flags.verbose ? util::LogLevel::info : util::LogLevel::warn);
  std::string path = resolve_config_path(flags.config);
  config::LoadResult loaded = load_without_secrets(path);

  // 2. Every run on this address holds the run lock while it runs (see
  //    run_lock.hpp), so that a keyshim one of them started lives as long as
  //    any of them.
  std::string problem;
  std::optional<RunLock> lock = RunLock::attach(loaded.config->server.listen, problem);
  if (!lock && problem.empty()) {
    return 128 + SIGINT; // interrupted while a keyshim another run started drained
  }
  if (!lock) {
    util::log_warn("{}: a keyshim this run starts stops when its command exits, even while another "
                   "`keyshim run` uses it",
                   problem);
  }
  Session session{flags, *loaded.config, path, lock ? &*lock : nullptr, Role::guest, {}};

  // 3. A keyshim already answering on the file's address serves the command.
  //    Nothing answering means we start one; anything else answering is an
  //    error, with fetch_status's explanation.
  StatusAnswer answer = fetch_status(instance_of(session.config));
  if (!answer.ok() && !answer.refused) {
    throw std::runtime_error(fmt::format("cannot run {}: {}", flags.command.front(), answer.error));
  }
  if (answer.ok() || !serve_here(session)) {
    session.role = lock && lock->owned_by_another_run() ? Role::watching : Role::guest;
  }

  // 4. Run the command, then stop what this run serves.
  int code = run_command(session, signals);
  stop_serving(session);
  return code;
}

} // namespace

Subcommand add_run(CLI::App& parent) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* app = parent.add_subcommand(
      "run",
      "run COMMAND with the variables `keyshim env` prints, starting keyshim when none answers and "
      "keeping it while any run uses it; exits with COMMAND's exit code (127 not found, 126 not executable)");
  add_config_option(*app, flags->config);
  app->add_flag("-v,--verbose", flags->verbose, "log keyshim's requests to stderr (default: warnings only)");
  app->add_option("command", flags->command, "the command and its arguments, after --")->required();
  return {app, [flags] { return run_run(*flags); }};
}

} // namespace keyshim::cli
