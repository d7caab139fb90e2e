#pragma once
// Listening sockets handed over by the service manager (socket activation):
// systemd's keyshim.socket, or the "Listeners" entry of the launchd agent.
// The manager owns the address, so keyshim starts on the first connection
// and a restart never refuses one: connections wait in the socket's queue.
#include "config/config.hpp"

#include <string>
#include <vector>

namespace keyshim::server {

struct InheritedSocket {
  int fd = -1;
  config::ListenAddress address; // what it is bound to, "127.0.0.1:8787"
  bool ipv6 = false;
};

struct InheritedSockets {
  std::string manager; // "systemd" or "launchd"; "" when none were passed
  std::vector<InheritedSocket> sockets;
};

// Take the sockets the service manager passed: systemd's LISTEN_FDS (from
// fd 3, for this pid per LISTEN_PID) on Linux, launch_activate_socket on
// macOS. LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are unset and the sockets
// made close-on-exec, so key_cmd helpers see neither. Empty when none were
// passed. Throws std::runtime_error when one cannot be served: keyshim never
// serves a socket that is not a listening TCP socket on loopback.
InheritedSockets take_inherited_sockets();

// "" when `fd` is a listening TCP stream socket bound to a loopback address
// (then `socket` says which); otherwise why it is not one.
std::string check_inherited_socket(int fd, InheritedSocket& socket);

} // namespace keyshim::server
