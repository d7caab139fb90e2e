#include "support/process_probe.hpp"

#include "support/temp_dir.hpp"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace keyshim::test {

bool is_running(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    return false;
  }
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::size_t state = stat.rfind(')');
  return state != std::string::npos && state + 2 < stat.size() && stat[state + 2] != 'Z' &&
         stat[state + 2] != 'X';
}

bool ends_soon(pid_t pid) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (!is_running(pid)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t pid_in(const std::string& path) {
  std::string text = read_file(path);
  return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
}

} // namespace keyshim::test
