#include "service/host.hpp"

#include <fmt/format.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

namespace keyshim::service {
namespace {

bool is_absolute(const char* path) {
  return path != nullptr && path[0] == '/';
}

} // namespace

Platform host_platform() {
#ifdef __APPLE__
  return Platform::launchd;
#else
  return Platform::systemd;
#endif
}

const char* to_string(Platform platform) {
  return platform == Platform::launchd ? "launchd" : "systemd";
}

std::string current_executable_path() {
  std::error_code error;
#ifdef __APPLE__
  std::uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::vector<char> buffer(size + 1, '\0');
  if (_NSGetExecutablePath(buffer.data(), &size) != 0) {
    throw std::runtime_error("cannot find the path of the keyshim binary (_NSGetExecutablePath)");
  }
  std::filesystem::path path = std::filesystem::canonical(buffer.data(), error);
#else
  // The kernel's own record of the executable: right even when keyshim was
  // started through a relative path or a symlink in $PATH.
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
#endif
  if (error) {
    throw std::runtime_error(fmt::format("cannot find the path of the keyshim binary: {}", error.message()));
  }
  return path.string();
}

std::string home_directory() {
  const char* home = std::getenv("HOME");
  if (is_absolute(home)) {
    return home;
  }
  const passwd* entry = ::getpwuid(::getuid());
  if (entry != nullptr && is_absolute(entry->pw_dir)) {
    return entry->pw_dir;
  }
  throw std::runtime_error("cannot find your home directory: HOME is not set");
}

std::string config_home(const std::string& home) {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (is_absolute(xdg)) {
    return xdg;
  }
  return home + "/.config";
}

unsigned current_uid() {
  return static_cast<unsigned>(::getuid());
}

std::string foreign_home_problem(const std::string& home) {
  struct stat info {};
  if (::stat(home.c_str(), &info) != 0) {
    return fmt::format("home directory {} does not exist", home);
  }
  if (info.st_uid != ::geteuid()) {
    return fmt::format("home directory {} belongs to uid {}, but keyshim runs as uid {}; run "
                       "`keyshim service` as the user who owns it, without sudo",
                       home, info.st_uid, ::geteuid());
  }
  return {};
}

} // namespace keyshim::service
