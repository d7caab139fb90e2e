#pragma once
// Facts about the machine and user a service is installed for. Everything
// else in this layer takes these as values, so plans are pure and testable.
#include <string>

namespace keyshim::service {

// Which service manager runs user services here.
enum class Platform { systemd, launchd };

// launchd on macOS, systemd everywhere else (decided at compile time).
Platform host_platform();
// "systemd" / "launchd".
const char* to_string(Platform platform);

// The absolute path of the running executable (/proc/self/exe on Linux,
// _NSGetExecutablePath on macOS), with symlinks resolved. Throws
// std::runtime_error when the system cannot tell.
std::string current_executable_path();

// $HOME when set and absolute, else the password database entry for the
// current user. Throws std::runtime_error when neither gives one.
std::string home_directory();

// $XDG_CONFIG_HOME when set and absolute, else HOME/.config: where systemd
// looks for user units (HOME/.config/systemd/user).
std::string config_home(const std::string& home);

// The real user id, for launchd's gui/UID domain.
unsigned current_uid();

// "" when `home` belongs to the user running keyshim; otherwise why a user
// service must not be installed there (typically `sudo keyshim service
// install` with the invoking user's HOME: root-owned files in their home,
// and a unit for the wrong service manager).
std::string foreign_home_problem(const std::string& home);

} // namespace keyshim::service
