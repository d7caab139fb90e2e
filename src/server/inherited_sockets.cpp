#include "server/inherited_sockets.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifdef __linux__
#include <systemd/sd-daemon.h>
#endif
#ifdef __APPLE__
#include <launch.h>
#endif

namespace keyshim::server {
namespace {

// The name of the socket entry in launchd/dev.keyshim.plist.
[[maybe_unused]] constexpr const char* k_launchd_socket_name = "Listeners";

bool int_option(int fd, int level, int name, int& value) {
  socklen_t size = sizeof value;
  return ::getsockopt(fd, level, name, &value, &size) == 0;
}

bool is_loopback(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  if (IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr)) {
    return true;
  }
  return IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr) && v6.sin6_addr.s6_addr[12] == 127;
}

config::ListenAddress address_of(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  config::ListenAddress out;
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    out.port = ntohs(v4.sin_port);
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    out.port = ntohs(v6.sin6_port);
  }
  out.host = text;
  return out;
}

// How to point the manager's socket at loopback, for error messages.
std::string fix_for(const std::string& manager) {
  if (manager == "launchd") {
    return "set SockNodeName to 127.0.0.1 in the Listeners socket of "
           "~/Library/LaunchAgents/dev.keyshim.plist, "
           "or run `keyshim service install` again";
  }
  return "set ListenStream=127.0.0.1:PORT in keyshim.socket, or run `keyshim service install` again";
}

// Check, mark close-on-exec and keep each of `fds`.
InheritedSockets adopt(const std::string& manager, const int* fds, std::size_t count) {
  InheritedSockets taken;
  taken.manager = manager;
  for (std::size_t i = 0; i < count; ++i) {
    InheritedSocket socket;
    if (std::string problem = check_inherited_socket(fds[i], socket); !problem.empty()) {
      throw std::runtime_error(fmt::format("the socket passed by {} (fd {}) {}: keyshim holds API keys and "
                                           "serves only listening TCP sockets on loopback; {}",
                                           manager, fds[i], problem, fix_for(manager)));
    }
    ::fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    taken.sockets.push_back(socket);
  }
  return taken;
}

#ifdef __linux__
InheritedSockets take_from_systemd() {
  // unset_environment=1: LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES go, so
  // key_cmd helpers do not think the sockets are theirs. It also makes the
  // descriptors close-on-exec; adopt() does that again, for every platform.
  int count = ::sd_listen_fds(1);
  if (count < 0) {
    throw std::runtime_error(
        fmt::format("cannot take the sockets passed by systemd (LISTEN_FDS): {}", std::strerror(-count)));
  }
  std::vector<int> fds;
  fds.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    fds.push_back(SD_LISTEN_FDS_START + i);
  }
  return adopt("systemd", fds.data(), fds.size());
}
#endif

#ifdef __APPLE__
InheritedSockets take_from_launchd() {
  int* fds = nullptr;
  std::size_t count = 0;
  int error = ::launch_activate_socket(k_launchd_socket_name, &fds, &count);
  // ESRCH: not started by launchd; ENOENT: the agent has no such socket.
  if (error == ESRCH || error == ENOENT) {
    return {};
  }
  if (error != 0) {
    throw std::runtime_error(fmt::format("cannot take the \"{}\" socket from launchd: {}",
                                         k_launchd_socket_name, std::strerror(error)));
  }
  std::vector<int> copied(fds, fds + count);
  std::free(fds);
  return adopt("launchd", copied.data(), copied.size());
}
#endif

} // namespace

std::string check_inherited_socket(int fd, InheritedSocket& socket) {
  int type = 0;
  if (!int_option(fd, SOL_SOCKET, SO_TYPE, type)) {
    return errno == ENOTSOCK ? "is not a socket"
                             : fmt::format("cannot be inspected ({})", std::strerror(errno));
  }
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    return fmt::format("cannot be inspected ({})", std::strerror(errno));
  }
  if (type != SOCK_STREAM || (address.ss_family != AF_INET && address.ss_family != AF_INET6)) {
    return "is not a TCP stream socket";
  }
#ifdef SO_PROTOCOL
  int protocol = 0;
  if (int_option(fd, SOL_SOCKET, SO_PROTOCOL, protocol) && protocol != IPPROTO_TCP) {
    return "is not a TCP stream socket";
  }
#endif
  socket.fd = fd;
  socket.ipv6 = address.ss_family == AF_INET6;
  socket.address = address_of(address);
  if (!is_loopback(address)) {
    return fmt::format("is bound to {}, not to a loopback address", socket.address.text());
  }
  int listening = 0;
  if (!int_option(fd, SOL_SOCKET, SO_ACCEPTCONN, listening) || listening == 0) {
    return fmt::format("on {} is not listening", socket.address.text());
  }
  return {};
}

InheritedSockets take_inherited_sockets() {
#if defined(__linux__)
  return take_from_systemd();
#elif defined(__APPLE__)
  return take_from_launchd();
#else
  return {};
#endif
}

} // namespace keyshim::server
