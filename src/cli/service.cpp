// keyshim service install|uninstall|status: a systemd user unit (Linux) or a
// launchd agent (macOS) that runs `keyshim serve -c FILE`, by default behind
// a socket the service manager owns (keyshim.socket, the agent's Sockets
// entry; --no-socket for the plain service). The steps come from
// service::plan_*; --dry-run prints them, a real run executes them.
#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "service/host.hpp"
#include "service/plan_executor.hpp"
#include "service/service_plan.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace keyshim::cli {
namespace {

struct ServiceOptions {
  std::string config;
  bool dry_run = false;
  bool no_socket = false;
};

// The service runs without the caller's environment, so whatever
// $KEYSHIM_CONFIG or the XDG default names now is baked into the unit as an
// absolute path. Symlinks are kept: a pool file linked from a dotfiles
// repository should follow the link at every start.
std::string absolute_config_path(const std::string& flag_value) {
  return std::filesystem::absolute(resolve_config_path(flag_value)).lexically_normal().string();
}

service::ServiceTarget gather_target(bool for_install, const std::string& config_path) {
  service::ServiceTarget target;
  target.platform = service::host_platform();
  target.home = service::home_directory();
  target.config_home = service::config_home(target.home);
  target.uid = service::current_uid();
  if (for_install) {
    target.binary_path = service::current_executable_path();
    target.config_path = config_path;
  }
  return target;
}

// Prints each step as it runs; the commands' own output (systemctl's errors)
// follows the line that announced them.
service::StepObserver printing_observer() {
  service::StepObserver observer;
  observer.before = [](const service::Action& action) {
    fmt::print("  {}\n", action.text());
    // Before the child writes to the same terminal or pipe.
    std::fflush(stdout);
  };
  observer.after = [](const service::Action& action, const service::StepResult& result) {
    if (!result.ok && !action.required) {
      fmt::print("    ({}; continuing)\n", result.command ? result.command->describe() : result.error);
    }
  };
  return observer;
}

// After a failed step: what went wrong, and the remaining steps as commands
// the user can run once the cause is fixed.
void report_failure(const service::Plan& plan, const service::ExecutionResult& execution,
                    service::Platform platform) {
  const service::Action& failed = plan.actions[execution.failed_step];
  const service::StepResult& result = execution.failure;
  bool file_written = false;
  for (std::size_t i = 0; i < execution.failed_step; ++i) {
    file_written = file_written || plan.actions[i].kind == service::Action::Kind::write_file;
  }

  if (failed.kind != service::Action::Kind::run) {
    fmt::print(stderr, "keyshim: error: {}\n", result.error);
    return;
  }
  const std::string& program = failed.argv.front();
  if (result.command && !result.command->started) {
    fmt::print(stderr, "keyshim: error: {}: {}; this system does not seem to run {}\n", program,
               result.command->describe(), service::to_string(platform));
  } else {
    fmt::print(stderr, "keyshim: error: `{}` failed ({})\n", failed.text(),
               result.command ? result.command->describe() : result.error);
  }
  // When systemctl fails, ask whether the user manager answers at all: if it
  // does not, the unit is not the problem; the usual cause is a shell
  // without a user session bus.
  if (platform == service::Platform::systemd && result.command && result.command->started &&
      !service::run_command_captured({"systemctl", "--user", "show-environment"}).ok()) {
    fmt::print(stderr, "keyshim: systemd's user manager is not reachable from this shell (no user session "
                       "bus: a container, a `su`/`sudo` shell, or ssh without `loginctl enable-linger`?)\n");
  }
  if (file_written) {
    fmt::print(stderr, "keyshim: {} is written; once that is fixed, run:\n", plan.unit_path);
  } else {
    fmt::print(stderr, "keyshim: once that is fixed, run:\n");
  }
  for (std::size_t i = execution.failed_step; i < plan.actions.size(); ++i) {
    fmt::print(stderr, "  {}\n", plan.actions[i].text());
  }
}

int execute(const service::Plan& plan, service::Platform platform) {
  service::ExecutionResult execution = service::execute_plan(plan, service::run_command, printing_observer());
  if (!execution.ok) {
    report_failure(plan, execution, platform);
    return 1;
  }
  return 0;
}

// What now runs where, and where to look.
void print_installed(const service::Plan& plan, const service::ServiceTarget& target) {
  bool launchd = target.platform == service::Platform::launchd;
  if (target.socket) {
    fmt::print("keyshim: installed {}{}; {} listens on {} and starts keyshim at the first connection\n",
               launchd ? "" : plan.socket_path + " and ", plan.unit_path, launchd ? "launchd" : "systemd",
               target.listen.text());
  } else {
    fmt::print("keyshim: installed and started {}\n", plan.unit_path);
  }
  if (launchd) {
    fmt::print("  logs:   {}/Library/Logs/keyshim/keyshim.log\n", target.home);
    return;
  }
  fmt::print("  logs:   journalctl --user -u keyshim -f\n"
             "  state:  keyshim service status\n"
             "  reload: systemctl --user reload keyshim (after editing the pool file)\n"
             "  to keep it running while you are logged out: loginctl enable-linger\n");
}

int run_install(const ServiceOptions& options) {
  std::string config_path = absolute_config_path(options.config);
  service::ServiceTarget target = gather_target(true, config_path);
  if (std::string problem = service::foreign_home_problem(target.home); !problem.empty()) {
    fmt::print(stderr, "keyshim: error: {}\n", problem);
    return 1;
  }
  // A service that fails at every start (and again every 5 s) helps nobody:
  // the pool file must load now, exactly as serve will load it.
  config::LoadResult loaded = config::load_pool_file(config_path);
  if (!loaded.ok()) {
    for (const config::Problem& problem : loaded.problems) {
      fmt::print(stderr, "{}\n", problem.text());
    }
    fmt::print(stderr,
               "keyshim: error: not installing the service: {} cannot be used (see above); fix it, "
               "check it with `keyshim check -c {}`, then run this again\n",
               config_path, config_path);
    return 1;
  }

  target.socket = !options.no_socket;
  target.listen = loaded.config->server.listen;
  service::Plan plan = service::plan_install(target);
  if (options.dry_run) {
    fmt::print("{}", service::plan_text(plan));
    return 0;
  }
  fmt::print("keyshim: installing the {} user service for {}\n", service::to_string(target.platform),
             config_path);
  if (int code = execute(plan, target.platform); code != 0) {
    return code;
  }
  print_installed(plan, target);
  fmt::print("  point your tools at it: eval \"$(keyshim env)\"\n");
  return 0;
}

int run_uninstall(const ServiceOptions& options) {
  service::ServiceTarget target = gather_target(false, {});
  service::Plan plan = service::plan_uninstall(target);
  if (options.dry_run) {
    fmt::print("{}", service::plan_text(plan));
    return 0;
  }
  fmt::print("keyshim: removing the {} user service\n", service::to_string(target.platform));
  if (int code = execute(plan, target.platform); code != 0) {
    return code;
  }
  fmt::print("keyshim: stopped and removed {}\n", plan.unit_path);
  return 0;
}

int run_status(const ServiceOptions& options) {
  service::ServiceTarget target = gather_target(false, {});
  std::error_code ignored;
  std::string socket_path = service::socket_file_path(target);
  target.socket = !socket_path.empty() && std::filesystem::exists(socket_path, ignored);
  service::Plan plan = service::plan_status(target);
  if (options.dry_run) {
    fmt::print("{}", service::plan_text(plan));
    return 0;
  }
  bool present = std::filesystem::exists(plan.unit_path, ignored);
  fmt::print("{}: {}\n", plan.unit_path,
             present ? "installed" : "not installed (run: keyshim service install)");
  std::fflush(stdout);
  // Passed through: the service manager's own view says it best. It exits
  // non-zero when the service is not running, which keyshim reports as 1.
  service::CommandResult result = service::run_command(plan.actions.front().argv);
  if (!result.started) {
    fmt::print(stderr, "keyshim: error: {}: {}\n", plan.actions.front().argv.front(), result.describe());
  }
  return result.ok() ? 0 : 1;
}

CLI::App* add_action(CLI::App& service_app, const char* name, const char* description,
                     ServiceOptions& options) {
  CLI::App* app = service_app.add_subcommand(name, description);
  add_config_option(*app, options.config);
  app->add_flag("--dry-run", options.dry_run,
                "print the file and the commands instead of writing and running them");
  return app;
}

} // namespace

Subcommand add_service(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "service", "install, remove or inspect the user service (systemd on Linux, launchd on macOS) "
                 "that runs `keyshim serve -c FILE`");
  app->require_subcommand(1);
  auto options = std::make_shared<ServiceOptions>();
  CLI::App* install = add_action(*app, "install",
                                 "write and start the service, behind a socket the service manager owns on "
                                 "the pool file's listen address; refuses while the pool file has problems",
                                 *options);
  install->add_flag("--no-socket", options->no_socket,
                    "a plain service that binds the address itself and starts at login, without socket "
                    "activation");
  CLI::App* uninstall = add_action(*app, "uninstall", "stop the service and remove its file", *options);
  add_action(*app, "status", "show the service manager's view of the service", *options);
  return {app, [options, install, uninstall] {
            if (install->parsed()) {
              return run_install(*options);
            }
            if (uninstall->parsed()) {
              return run_uninstall(*options);
            }
            return run_status(*options);
          }};
}

} // namespace keyshim::cli
