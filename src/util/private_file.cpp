#include "util/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keyshim::util {
namespace {

std::string failure(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// mkdir -p for the directories above `path`, each new one 0700.
bool make_parents(const std::string& path, std::string& error) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      error = failure("cannot create", dir);
      return false;
    }
  }
  return true;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

} // namespace

bool write_private_file(const std::string& path, std::string_view text, std::string& error) {
  if (!make_parents(path, error)) {
    return false;
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    error = failure("cannot create", temporary);
    return false;
  }
  bool written = write_all(fd, text) && ::fsync(fd) == 0;
  if (!written) {
    error = failure("cannot write", temporary);
  }
  if (::close(fd) != 0 && written) {
    written = false;
    error = failure("cannot write", temporary);
  }
  if (written && ::rename(temporary.c_str(), path.c_str()) != 0) {
    written = false;
    error = failure("cannot replace", path);
  }
  if (!written) {
    ::unlink(temporary.c_str());
  }
  return written;
}

std::optional<std::string> read_private_file(const std::string& path, std::size_t max_bytes,
                                             std::string& error) {
  error.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT) {
      error = failure("cannot open", path);
    }
    return std::nullopt;
  }
  struct stat info {};
  std::string text;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = path + " is not a regular file";
  } else if (info.st_uid != ::geteuid()) {
    error = path + " belongs to another user";
  } else if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    error = path + " is writable by other users";
  } else if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    error = path + " is larger than " + std::to_string(max_bytes) + " bytes";
  } else {
    text.resize(static_cast<std::size_t>(info.st_size));
    ssize_t n = ::read(fd, text.data(), text.size());
    if (n != static_cast<ssize_t>(text.size())) {
      error = failure("cannot read", path);
    }
  }
  ::close(fd);
  if (!error.empty()) {
    return std::nullopt;
  }
  return text;
}

} // namespace keyshim::util
