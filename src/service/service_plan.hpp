#pragma once
// What `keyshim service install|uninstall|status` does, as a list of steps
// computed without touching anything. --dry-run prints the list; a real run
// hands the same list to execute_plan(), so the two cannot disagree.
#include "config/config.hpp"
#include "service/host.hpp"

#include <string>
#include <vector>

namespace keyshim::service {

struct Action {
  enum class Kind { make_directory, write_file, remove_file, run };

  Kind kind = Kind::run;
  std::string path;              // make_directory, write_file, remove_file
  std::string content;           // write_file
  unsigned mode = 0;             // make_directory (for directories it creates), write_file
  std::vector<std::string> argv; // run
  // false: a failure is reported and the plan goes on (stopping a service
  // that is not running, say).
  bool required = true;

  // The step as a shell command a user could run by hand:
  // "mkdir -p -m 0700 /home/u/.config/systemd/user", "systemctl --user daemon-reload".
  std::string text() const;
};

// Everything a plan depends on, gathered from the host by the caller.
struct ServiceTarget {
  Platform platform = Platform::systemd;
  std::string home;        // absolute
  std::string config_home; // systemd: $XDG_CONFIG_HOME or HOME/.config
  unsigned uid = 0;        // launchd: the gui/UID domain
  std::string binary_path; // install: absolute path of keyshim
  std::string config_path; // install: absolute path of the pool file
  // install: the service manager owns the listening socket on `listen` (the
  // pool file's) and starts keyshim at the first connection; status: a
  // socket unit is installed.
  bool socket = false;
  config::ListenAddress listen;
};

struct Plan {
  std::string unit_path;   // where the unit or agent file lives
  std::string unit_text;   // install: the rendered file
  std::string socket_path; // systemd: where the socket unit lives
  std::string socket_text; // install with a socket (systemd): the rendered socket unit
  std::vector<Action> actions;
};

// systemd: CONFIG_HOME/systemd/user/keyshim.service;
// launchd: HOME/Library/LaunchAgents/dev.keyshim.plist.
std::string unit_file_path(const ServiceTarget& target);
// systemd: CONFIG_HOME/systemd/user/keyshim.socket (launchd: "", the socket
// is part of the agent file).
std::string socket_file_path(const ServiceTarget& target);

// Write the unit or agent file and start it now and at every login.
// systemd: mkdir, write, daemon-reload, enable, restart (restart rather than
// `enable --now` so a reinstall also picks up a new binary or pool path).
// With a socket, systemd: mkdir, write both, daemon-reload, disable and stop
// the service (it no longer starts at login, and frees the port), enable and
// restart the socket; keyshim starts at the first connection. Without one,
// a socket unit left by an earlier install is stopped and removed first.
// launchd: mkdir (agents, logs), write, bootout (if loaded), enable, bootstrap.
// Throws std::invalid_argument for unusable paths (see unit_templates.hpp).
Plan plan_install(const ServiceTarget& target);

// Stop it, keep it from starting at login, remove the file.
Plan plan_uninstall(const ServiceTarget& target);

// Show the service manager's view of it (one command, output passed through).
Plan plan_status(const ServiceTarget& target);

// What --dry-run prints: the file to be written ("==> PATH <==" and its
// text, when there is one), then every step as a command, one per line.
std::string plan_text(const Plan& plan);

} // namespace keyshim::service
