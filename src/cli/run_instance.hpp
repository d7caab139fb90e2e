#pragma once
// The keyshim a `keyshim run` starts in-process when none answers on the
// pool file's address (or when the run that started the one it used is
// gone): loaded, bound and serving on a thread of its own while commands
// use it, then drained like `serve` on SIGTERM.
#include "server/shim_server.hpp"

#include <future>
#include <memory>
#include <string>
#include <thread>

namespace keyshim::cli {

class RunInstance {
public:
  RunInstance() = default;
  // Drains, if it still serves.
  ~RunInstance();
  RunInstance(const RunInstance&) = delete;
  RunInstance& operator=(const RunInstance&) = delete;

  // Load `path` (key_cmd and all), bind its address and serve. False with
  // `error` when the address cannot be bound (someone may serve it by now).
  // Throws when the pool file is unusable: a keyshim answering only 503s
  // would help no command.
  bool start(const std::string& path, std::string& error);
  bool serving() const { return m_shim != nullptr; }
  std::string listen() const { return m_shim->listen_address().text(); }

  // Stop accepting; what is in flight gets drain_timeout, then is cut.
  void stop();

private:
  std::unique_ptr<server::ShimServer> m_shim;
  std::promise<void> m_served;
  std::future<void> m_drained;
  std::thread m_serving;
};

} // namespace keyshim::cli
