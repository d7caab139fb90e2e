#include "util/process_memory.hpp"

#include <sys/resource.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstring>

namespace keyshim::util {

std::string protect_process_memory() {
  std::string problems;
  rlimit none{0, 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0) {
    problems += std::string("core dumps stay enabled: ") + std::strerror(errno);
  }
#ifdef __linux__
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    problems += (problems.empty() ? "" : "; ") + std::string("debuggers may attach: ") + std::strerror(errno);
  }
#endif
  return problems;
}

bool process_memory_is_exposed() {
  rlimit core{};
  if (::getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur != 0 || core.rlim_max != 0) {
    return true;
  }
#ifdef __linux__
  return ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0;
#else
  return false;
#endif
}

} // namespace keyshim::util
