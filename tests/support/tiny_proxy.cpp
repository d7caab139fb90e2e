#include "support/tiny_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace keyshim::test {
namespace {

// tinyproxy's "ready" line: it is logged after the listening socket is open.
constexpr const char* k_ready = "Accepting connections";

std::string config_text(int port, const TinyProxyOptions& options) {
  // No User/Group: as root, tinyproxy 1.11 warns ("You SHOULD set a
  // UserName") and keeps running as root; as anyone else it runs as them.
  // No LogFile and no Syslog: in the foreground (-d) it logs to stdout.
  std::string text = "Port " + std::to_string(port) +
                     "\n"
                     "Listen 127.0.0.1\n"
                     "Allow 127.0.0.1\n"
                     "Timeout 30\n"
                     "MaxClients 32\n"
                     "LogLevel Info\n"
                     "DisableViaHeader Yes\n";
  for (int allowed : options.connect_ports) {
    text += "ConnectPort " + std::to_string(allowed) + "\n";
  }
  if (!options.user.empty()) {
    text += "BasicAuth " + options.user + " " + options.password + "\n";
  }
  return text;
}

} // namespace

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

TinyProxy::TinyProxy(TinyProxyOptions options) {
  // The port is free when picked but tinyproxy binds it a moment later; if
  // another process took it in between, tinyproxy exits and a new port is
  // tried. (Debian's `tinyproxy` package would also start a service on
  // 8888; install-deps installs only tinyproxy-bin, and a picked port is
  // never one in use anyway.)
  std::string last_output;
  for (int attempt = 0; attempt < 3; ++attempt) {
    m_port = free_loopback_port();
    std::string conf = m_dir.write("tinyproxy.conf", config_text(m_port, options));
    RunOptions run;
    run.timeout = std::chrono::minutes(10); // only wait() uses it; the destructor kills
    try {
      m_child.emplace(ChildProcess::start({"tinyproxy", "-d", "-c", conf}, run));
    } catch (const std::runtime_error& error) {
      throw std::runtime_error(std::string(error.what()) +
                               " (run tools/install-deps to install tinyproxy-bin)");
    }
    // Event-driven: returns as soon as the line appears, or when tinyproxy
    // exits (its pipes close), or after 10 s.
    if (m_child->wait_for_stdout(k_ready, std::chrono::seconds(10))) {
      return;
    }
    last_output = m_child->out() + m_child->err();
    m_child.reset(); // kills it if it is somehow still running
  }
  throw std::runtime_error("tinyproxy did not start: " + last_output);
}

bool TinyProxy::wait_for_log(const std::string& needle, std::chrono::milliseconds timeout) {
  return m_child->wait_for_stdout(needle, timeout);
}

std::string TinyProxy::log() {
  m_child->wait_for_stdout("\n\x01never logged\x01\n", std::chrono::milliseconds(0));
  return m_child->out();
}

} // namespace keyshim::test
