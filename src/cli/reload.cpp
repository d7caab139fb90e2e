// keyshim reload: make the running instance re-read its pool file (SIGHUP)
// and confirm that it did. The signal itself carries no answer, so the
// confirmation comes from /status: every successful load bumps its
// "generation"; a rejected file leaves it where it was.
#include "cli/commands.hpp"
#include "cli/run_lock.hpp"
#include "cli/status_table.hpp"
#include "config/loader.hpp"
#include "util/listener_owner.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace keyshim::cli {
namespace {

using namespace std::chrono_literals;

// A reload reads one file and perhaps runs key_cmd helpers: well under 5 s
// unless something is wrong, and then the instance's log says what.
constexpr auto k_poll_interval = 100ms;
constexpr int k_max_polls = 50;

// Loading first means a file we can tell is bad is never sent to the
// instance: it would reject it too, but the user would have to find its log
// to learn why. Keys are not resolved here: the instance resolves key_env and
// key_cmd in its own environment, which for a service is not this shell's.
bool validate(const std::string& path, config::LoadResult& loaded) {
  loaded = config::load_pool_file(path, config::SecretResolution::skip);
  if (loaded.ok()) {
    return true;
  }
  for (const config::Problem& problem : loaded.problems) {
    fmt::print(stderr, "{}\n", problem.text());
  }
  std::size_t count = loaded.problems.size();
  fmt::print(stderr, "keyshim: {}: {} problem{}; not reloading: the running keyshim keeps its current pool\n",
             path, count, count == 1 ? "" : "s");
  return false;
}

// The instance re-reads *its* file, which is not necessarily the one just
// validated. Only a relative path (serve's working directory is unknown)
// cannot be compared.
void require_same_file(const std::string& ours, const std::string& theirs, const std::string& where) {
  namespace fs = std::filesystem;
  if (theirs.empty() || !fs::path(theirs).is_absolute()) {
    return;
  }
  std::error_code ignored;
  if (fs::weakly_canonical(ours, ignored) == fs::weakly_canonical(theirs, ignored)) {
    return;
  }
  throw std::runtime_error(
      fmt::format("{}: the keyshim on {} serves {}, not this file: run `keyshim reload -c "
                  "{}`, or restart it with `keyshim serve -c {}`",
                  ours, where, theirs, theirs, ours));
}

// Whatever answers /status on a loopback port may be another user's server,
// and the pid it reports is a number it chose: signal only a process that is
// keyshim, runs as this user and holds the socket listening on the address
// (read from /proc). Without /proc there is no such check, and no signal.
void require_trusted_pid(long long pid, const config::ListenAddress& listen) {
  const std::string where = listen.text();
#ifdef __linux__
  std::string mismatch = util::check_listener_owner({pid, listen.host, listen.port, ::getuid()});
  if (mismatch.empty()) {
    return;
  }
  throw std::runtime_error(
      fmt::format("{} reported pid {} in /status, but {}; not signalling it", where, pid, mismatch));
#else
  throw std::runtime_error(fmt::format(
      "{} reported pid {} in /status, and this system has no /proc to check that pid {} is your keyshim "
      "holding {}; not signalling it. Check it yourself (`lsof -nP -iTCP:{} -sTCP:LISTEN`), then run "
      "`kill -HUP {}`",
      where, pid, pid, where, listen.port, pid));
#endif
}

void send_sighup(long long pid, const std::string& where) {
  if (::kill(static_cast<pid_t>(pid), SIGHUP) == 0) {
    return;
  }
  int error = errno;
  throw std::runtime_error(
      fmt::format("cannot send SIGHUP to the keyshim on {} (pid {}): {}", where, pid, std::strerror(error)));
}

int run_reload(const std::string& path) {
  // 1. The file must be one keyshim would use.
  config::LoadResult loaded;
  if (!validate(path, loaded)) {
    return 1;
  }

  // 2. Find the instance it configures, and learn its pid and load generation.
  InstanceAddress instance = instance_of(*loaded.config);
  const std::string where = instance.listen.text();
  StatusAnswer before = fetch_status(instance);
  if (!before.ok()) {
    if (before.http_status == 401) {
      before.error +=
          " (if you just changed client_token, the instance still expects the old one: restart it)";
    }
    throw std::runtime_error(before.error);
  }
  require_same_file(path, before.json->string_at("config").value_or(""), where);
  long long pid = json_integer(*before.json, "pid");
  long long generation = json_integer(*before.json, "generation", -1);

  // 3. Signal it, once /proc shows it is ours, and unless `keyshim run`
  //    serves the address: it passes SIGHUP on to its command.
  require_trusted_pid(pid, instance.listen);
  if (RunLock::run_serves(instance.listen)) {
    throw std::runtime_error(fmt::format(
        "the keyshim on {} (pid {}) was started by `keyshim run`, which passes SIGHUP on to its command: "
        "not signalling it. The next `keyshim run` after the runs using it have exited reads the file again",
        where, pid));
  }
  send_sighup(pid, where);

  // 4. Wait, boundedly, for /status to show a new generation.
  for (int poll = 0; poll < k_max_polls; ++poll) {
    std::this_thread::sleep_for(k_poll_interval);
    StatusAnswer after = fetch_status(instance);
    if (after.ok() && json_integer(*after.json, "generation", -1) > generation) {
      const util::Json* totals = after.json->find("totals");
      long long keys = totals ? json_integer(*totals, "total") : 0;
      fmt::print("reloaded: {} key{} ({}, pid {})\n", keys, keys == 1 ? "" : "s", where, pid);
      return 0;
    }
  }
  fmt::print(stderr,
             "keyshim: error: the keyshim on {} (pid {}) did not take the new pool file within {}s: it "
             "rejected the file and keeps serving its current pool. Its log says why: the terminal "
             "running `keyshim serve`, `journalctl --user -u keyshim` (systemd) or "
             "~/Library/Logs/keyshim/keyshim.log (launchd)\n",
             where, pid,
             std::chrono::duration_cast<std::chrono::seconds>(k_poll_interval * k_max_polls).count());
  return 1;
}

} // namespace

Subcommand add_reload(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "reload", "validate the pool file, ask the running keyshim to re-read it (SIGHUP) and wait until "
                "it has; exit 0 when it took the file, 1 when the file is bad, no keyshim answered, or "
                "it rejected the file");
  add_config_option(*app, *path);
  return {app, [path] { return run_reload(resolve_config_path(*path)); }};
}

} // namespace keyshim::cli
