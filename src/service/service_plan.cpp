#include "service/service_plan.hpp"

#include "service/command_runner.hpp"
#include "service/unit_templates.hpp"

#include <fmt/format.h>

#include <optional>

namespace keyshim::service {
namespace {

// New directories are private: ~/.config may not exist yet, and nothing in
// it is anyone else's business. Existing directories are left as they are.
constexpr unsigned k_private_directory_mode = 0700;
// Unit and agent files hold paths, not secrets; launchd refuses agent files
// that are group- or world-writable.
constexpr unsigned k_unit_file_mode = 0644;

Action make_directory(std::string path) {
  Action action;
  action.kind = Action::Kind::make_directory;
  action.path = std::move(path);
  action.mode = k_private_directory_mode;
  return action;
}

Action write_file(std::string path, std::string content) {
  Action action;
  action.kind = Action::Kind::write_file;
  action.path = std::move(path);
  action.content = std::move(content);
  action.mode = k_unit_file_mode;
  return action;
}

Action remove_action(std::string path) {
  Action action;
  action.kind = Action::Kind::remove_file;
  action.path = std::move(path);
  return action;
}

Action run_action(std::vector<std::string> argv, bool required = true) {
  Action action;
  action.kind = Action::Kind::run;
  action.argv = std::move(argv);
  action.required = required;
  return action;
}

std::string directory_of(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

std::string launchd_domain(const ServiceTarget& target) {
  return fmt::format("gui/{}", target.uid);
}

std::string launchd_service(const ServiceTarget& target) {
  return fmt::format("{}/{}", launchd_domain(target), k_launchd_label);
}

std::vector<std::string> systemctl(std::vector<std::string> args) {
  std::vector<std::string> argv = {"systemctl", "--user"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Plan plan_systemd_install(const ServiceTarget& target) {
  Plan plan;
  plan.unit_path = unit_file_path(target);
  plan.socket_path = socket_file_path(target);
  plan.unit_text = render_systemd_unit(target.binary_path, target.config_path);
  plan.actions.push_back(make_directory(directory_of(plan.unit_path)));
  plan.actions.push_back(write_file(plan.unit_path, plan.unit_text));
  // A socket from an earlier install would hold the port and, through the
  // old unit's Requires=, keep starting the service; usually there is none.
  plan.actions.push_back(run_action(systemctl({"disable", "--now", k_systemd_socket_name}), false));
  plan.actions.push_back(remove_action(plan.socket_path));
  plan.actions.push_back(run_action(systemctl({"daemon-reload"})));
  plan.actions.push_back(run_action(systemctl({"enable", k_systemd_unit_name})));
  plan.actions.push_back(run_action(systemctl({"restart", k_systemd_unit_name})));
  return plan;
}

Plan plan_systemd_socket_install(const ServiceTarget& target) {
  Plan plan;
  plan.unit_path = unit_file_path(target);
  plan.socket_path = socket_file_path(target);
  plan.unit_text = render_systemd_unit(target.binary_path, target.config_path, true);
  plan.socket_text = render_systemd_socket(target.listen);
  plan.actions.push_back(make_directory(directory_of(plan.unit_path)));
  plan.actions.push_back(write_file(plan.socket_path, plan.socket_text));
  plan.actions.push_back(write_file(plan.unit_path, plan.unit_text));
  plan.actions.push_back(run_action(systemctl({"daemon-reload"})));
  // The socket starts keyshim now; an earlier plain install's start at login
  // goes, and stopping a running keyshim frees the port for the socket (the
  // next connection starts the new binary with the new pool file).
  plan.actions.push_back(run_action(systemctl({"disable", k_systemd_unit_name}), false));
  plan.actions.push_back(run_action(systemctl({"stop", k_systemd_unit_name}), false));
  plan.actions.push_back(run_action(systemctl({"enable", k_systemd_socket_name})));
  // restart, not start: a reinstall may have moved the address.
  plan.actions.push_back(run_action(systemctl({"restart", k_systemd_socket_name})));
  return plan;
}

} // namespace

std::string Action::text() const {
  switch (kind) {
  case Kind::make_directory:
    return fmt::format("mkdir -p -m {:04o} {}", mode, shell_command_text({path}));
  case Kind::write_file:
    return fmt::format("write {} (mode {:04o})", shell_command_text({path}), mode);
  case Kind::remove_file:
    return fmt::format("rm -f {}", shell_command_text({path}));
  case Kind::run:
    return shell_command_text(argv);
  }
  return {};
}

std::string socket_file_path(const ServiceTarget& target) {
  if (target.platform == Platform::launchd) {
    return {};
  }
  return fmt::format("{}/systemd/user/{}", target.config_home, k_systemd_socket_name);
}

std::string unit_file_path(const ServiceTarget& target) {
  if (target.platform == Platform::launchd) {
    return fmt::format("{}/Library/LaunchAgents/{}.plist", target.home, k_launchd_label);
  }
  return fmt::format("{}/systemd/user/{}", target.config_home, k_systemd_unit_name);
}

Plan plan_install(const ServiceTarget& target) {
  if (target.platform == Platform::systemd) {
    return target.socket ? plan_systemd_socket_install(target) : plan_systemd_install(target);
  }
  Plan plan;
  plan.unit_path = unit_file_path(target);
  std::optional<config::ListenAddress> socket;
  if (target.socket) {
    socket = target.listen;
  }
  plan.unit_text = render_launchd_plist(target.binary_path, target.config_path, target.home, socket);
  plan.actions.push_back(make_directory(directory_of(plan.unit_path)));
  // launchd opens the log file but does not create its directory.
  plan.actions.push_back(make_directory(target.home + "/Library/Logs/keyshim"));
  plan.actions.push_back(write_file(plan.unit_path, plan.unit_text));
  // bootstrap refuses a label that is already loaded, so a reinstall first
  // unloads the old one; that fails harmlessly on a first install.
  plan.actions.push_back(run_action({"launchctl", "bootout", launchd_service(target)}, false));
  // Undo an earlier `launchctl disable`, which would outlive the file.
  plan.actions.push_back(run_action({"launchctl", "enable", launchd_service(target)}));
  plan.actions.push_back(run_action({"launchctl", "bootstrap", launchd_domain(target), plan.unit_path}));
  return plan;
}

Plan plan_uninstall(const ServiceTarget& target) {
  Plan plan;
  plan.unit_path = unit_file_path(target);
  if (target.platform == Platform::launchd) {
    // Not loaded (already stopped, or never installed) is fine.
    plan.actions.push_back(run_action({"launchctl", "bootout", launchd_service(target)}, false));
    plan.actions.push_back(remove_action(plan.unit_path));
    return plan;
  }
  // A unit that is not installed or not running makes `disable --now` fail;
  // removing what is left must still happen. The socket goes first, or it
  // would start the service again at the next connection.
  plan.socket_path = socket_file_path(target);
  plan.actions.push_back(run_action(systemctl({"disable", "--now", k_systemd_socket_name}), false));
  plan.actions.push_back(run_action(systemctl({"disable", "--now", k_systemd_unit_name}), false));
  plan.actions.push_back(remove_action(plan.socket_path));
  plan.actions.push_back(remove_action(plan.unit_path));
  plan.actions.push_back(run_action(systemctl({"daemon-reload"})));
  return plan;
}

Plan plan_status(const ServiceTarget& target) {
  Plan plan;
  plan.unit_path = unit_file_path(target);
  if (target.platform == Platform::launchd) {
    plan.actions.push_back(run_action({"launchctl", "print", launchd_service(target)}));
    return plan;
  }
  std::vector<std::string> status = {"status", "--no-pager"};
  if (target.socket) {
    status.emplace_back(k_systemd_socket_name);
  }
  status.emplace_back(k_systemd_unit_name);
  plan.actions.push_back(run_action(systemctl(status)));
  return plan;
}

std::string plan_text(const Plan& plan) {
  std::string text;
  auto show_file = [&text](const std::string& path, const std::string& content) {
    if (content.empty()) {
      return;
    }
    text += fmt::format("==> {} <==\n{}", path, content);
    if (text.back() != '\n') {
      text += '\n';
    }
    text += '\n';
  };
  show_file(plan.socket_path, plan.socket_text);
  show_file(plan.unit_path, plan.unit_text);
  for (const Action& action : plan.actions) {
    text += action.text();
    text += action.required ? "\n" : "   # allowed to fail\n";
  }
  return text;
}

} // namespace keyshim::service
