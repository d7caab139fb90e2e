#include "config/file_access.hpp"
#include "config/text_helpers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace keyshim::config {
namespace {

constexpr std::size_t k_max_file_size = 1024 * 1024;

// Closes the descriptor on every path out of read_private_file.
class Descriptor {
public:
  explicit Descriptor(int fd) : m_fd(fd) {}
  ~Descriptor() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return m_fd; }

private:
  int m_fd;
};

std::string absolute_text(const std::string& path) {
  std::error_code ignored;
  std::filesystem::path absolute = std::filesystem::absolute(path, ignored);
  return absolute.empty() ? path : absolute.lexically_normal().string();
}

} // namespace

std::string file_permission_problem(const std::string& shown_path, unsigned mode, unsigned owner_uid,
                                    unsigned effective_uid) {
  if (owner_uid != effective_uid) {
    return fmt::format("owned by uid {}, but keyshim runs as uid {}: another user can change your "
                       "keys. Run keyshim as its owner, or: chown {} {}",
                       owner_uid, effective_uid, effective_uid, shown_path);
  }
  unsigned permissions = mode & 07777;
  if ((permissions & 077) == 0) {
    return "";
  }
  const char* risk =
      (permissions & 044) != 0 ? "other users can read your API keys" : "other users can change or run it";
  return fmt::format("permissions {:04o} are too open: {}. Run: chmod 600 {}", permissions, risk, shown_path);
}

std::string directory_problem(const std::string& file_path) {
  std::filesystem::path parent = std::filesystem::path(absolute_text(file_path)).parent_path();
  struct stat info {};
  if (parent.empty() || ::stat(parent.c_str(), &info) != 0) {
    return "";
  }
  // A sticky directory (like /tmp) lets others create files but not rename or
  // remove ours, so it cannot be used to swap the pool file.
  bool writable_by_others = (info.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (!writable_by_others || (info.st_mode & S_ISVTX) != 0) {
    return "";
  }
  return fmt::format("its directory {} is writable by other users (mode {:04o}): they could replace "
                     "your pool file. Run: chmod go-w {}",
                     parent.string(), info.st_mode & 07777u, parent.string());
}

FileRead read_private_file(const std::string& path) {
  std::string shown = absolute_text(path);
  // One open, then every check on that descriptor: checking the path and then
  // opening it would let the file be swapped in between.
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return {std::nullopt, fmt::format("no such file. Create a starter one with: keyshim init "
                                        "-c {}",
                                        shown)};
    }
    return {std::nullopt, fmt::format("cannot open: {}", errno_text(errno))};
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return {std::nullopt, fmt::format("cannot examine: {}", errno_text(errno))};
  }
  if (!S_ISREG(info.st_mode)) {
    return {std::nullopt, "not a regular file; give the path of the pool file itself"};
  }
  std::string problem = file_permission_problem(shown, info.st_mode, info.st_uid, ::geteuid());
  if (problem.empty()) {
    problem = directory_problem(path);
  }
  if (!problem.empty()) {
    return {std::nullopt, problem};
  }
  if (static_cast<std::size_t>(info.st_size) > k_max_file_size) {
    return {std::nullopt, "larger than 1 MiB; this is not a pool file"};
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return {std::nullopt, fmt::format("cannot read: {}", errno_text(errno))};
    }
    if (got == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > k_max_file_size) {
      return {std::nullopt, "larger than 1 MiB; this is not a pool file"};
    }
  }
  return {std::move(text), ""};
}

} // namespace keyshim::config
