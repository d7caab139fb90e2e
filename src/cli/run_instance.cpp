#include "cli/run_instance.hpp"

#include "cli/child_command.hpp"
#include "util/log.hpp"
#include "util/process_memory.hpp"

#include <stdexcept>
#include <vector>

namespace keyshim::cli {

RunInstance::~RunInstance() {
  if (serving()) {
    stop();
  }
}

bool RunInstance::start(const std::string& path, std::string& error) {
  if (std::string problem = util::protect_process_memory(); !problem.empty()) {
    util::log_warn("keys in memory are less protected: {}", problem);
  }
  std::vector<int> inherited = open_descriptors();
  server::ServeOptions options;
  options.config_path = path;
  auto shim = std::make_unique<server::ShimServer>(options);
  shim->load();
  if (!shim->state()->config) {
    throw std::runtime_error(shim->state()->problem);
  }
  if (!shim->bind(error)) {
    return false;
  }
  // What keyshim opened itself, such as the listening socket, must not
  // outlive it in the command or its children.
  keep_descriptors_from_child(inherited);
  m_shim = std::move(shim);
  m_served = std::promise<void>();
  m_drained = m_served.get_future();
  m_serving = std::thread([this] {
    m_shim->serve();
    m_served.set_value();
  });
  return true;
}

void RunInstance::stop() {
  m_shim->begin_shutdown();
  if (m_drained.wait_for(m_shim->drain_timeout()) == std::future_status::timeout) {
    util::log_warn("drain timeout reached: cutting {} in-flight requests", m_shim->in_flight());
    m_shim->abort_in_flight();
  }
  m_serving.join();
  m_shim.reset();
}

} // namespace keyshim::cli
