#include "cli/commands.hpp"

#include "config/config.hpp"
#include "config/paths.hpp"
#include "server/inherited_sockets.hpp"
#include "server/shim_server.hpp"
#include "server/signal_watcher.hpp"
#include "server/state_keeper.hpp"
#include "util/log.hpp"
#include "util/process_memory.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <memory>
#include <stdexcept>

namespace keyshim::cli {
namespace {

struct ServeFlags {
  std::string config;
  std::string listen;
  std::string log_format = "text";
  bool verbose = false;
  bool quiet = false;
};

void configure_logging(const ServeFlags& flags) {
  util::Logger& logger = util::Logger::instance();
  logger.set_format(flags.log_format == "json" ? util::LogFormat::json : util::LogFormat::text);
  logger.set_level(flags.verbose ? util::LogLevel::debug
                   : flags.quiet ? util::LogLevel::warn
                                 : util::LogLevel::info);
}

// Each stream holds two descriptors (client and upstream). The usual soft
// limit of 1024 would cap keyshim near 500 concurrent streams while the hard
// limit (often 524288 under systemd) allows far more, so raise soft to hard.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      util::log_debug("open file limit raised from {} to {}", before, limit.rlim_cur);
    }
  }
}

void listen(server::ShimServer& shim, const server::InheritedSockets& inherited,
            const server::ServeOptions& options) {
  if (inherited.sockets.empty()) {
    std::string error;
    if (!shim.bind(error)) {
      throw std::runtime_error(error);
    }
    util::log_info("keyshim listening on http://{} (pool file {})", shim.listen_address().text(),
                   options.config_path);
    return;
  }
  config::ListenAddress configured = shim.listen_address();
  shim.adopt(inherited);
  for (const server::InheritedSocket& socket : inherited.sockets) {
    util::log_info("keyshim listening on http://{} (socket from {}; pool file {})", socket.address.text(),
                   inherited.manager, options.config_path);
  }
  if (configured != shim.listen_address()) {
    util::log_warn("{} says listen = \"{}\", but {} passed a socket on {}; keyshim serves that one (run "
                   "`keyshim service install` again to move it)",
                   options.listen ? "--listen" : "the pool file", configured.text(), inherited.manager,
                   shim.listen_address().text());
  }
}

int run_serve(const ServeFlags& flags) {
  // 1. Signals are handled on one thread by sigwait; every thread started
  //    from here on inherits the blocked mask.
  server::SignalWatcher::block_signals();
  configure_logging(flags);
  raise_descriptor_limit();

  // 2. Before any key is read: no core dump and no same-user debugger may
  //    read the keys out of this process.
  if (std::string problem = util::protect_process_memory(); !problem.empty()) {
    util::log_warn("keys in memory are less protected: {}", problem);
  }

  // 3. Sockets a service manager passed (socket activation) are taken now,
  //    before a key_cmd helper could be started and see them.
  server::InheritedSockets inherited = server::take_inherited_sockets();

  // 4. Options: the pool file, and an explicit --listen that overrides it.
  server::ServeOptions options;
  options.config_path = resolve_config_path(flags.config);
  if (!flags.listen.empty()) {
    std::string error;
    auto listen = config::parse_listen_address(flags.listen, error);
    if (!listen) {
      throw std::runtime_error(fmt::format("--listen {}: {}", flags.listen, error));
    }
    options.listen = *listen;
  }

  // 5. Load the pool. A file keyshim cannot use does not stop it: it serves
  //    503s that say what is wrong, so the tool pointed at it explains itself.
  server::ShimServer shim(options);
  shim.load();

  // 6. Health saved by the last run (`state = true`): keys cooling or
  //    disabled then still are, today's usage goes on counting.
  server::StateKeeper state(config::state_file_path(), shim.published());
  state.restore();

  // 7. Listen: on the sockets from the service manager when there are some
  //    (the file's listen is then the manager's business), else bind the
  //    file's address; loopback only either way.
  listen(shim, inherited, options);

  // 8. Serve until SIGINT/SIGTERM has drained the in-flight responses,
  //    saving health once a minute when it changed, and once more at the end.
  server::SignalWatcher signals(shim);
  state.start();
  shim.serve();
  state.stop();
  util::log_info("stopped");
  return 0;
}

} // namespace

Subcommand add_serve(CLI::App& parent) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* app = parent.add_subcommand("serve", "run keyshim in the foreground, logging to stderr");
  add_config_option(*app, flags->config);
  app->add_option("--listen", flags->listen, "ADDR:PORT to listen on (loopback only; overrides the file)")
      ->type_name("ADDR:PORT");
  app->add_option("--log-format", flags->log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  auto* verbose = app->add_flag("-v,--verbose", flags->verbose, "debug logging");
  app->add_flag("-q,--quiet", flags->quiet, "warnings and errors only")->excludes(verbose);
  return {app, [flags] { return run_serve(*flags); }};
}

} // namespace keyshim::cli
