#pragma once
// The systemd units and launchd agent that run `keyshim serve -c FILE`.
//
// The templates are the shipped files themselves (systemd/keyshim.service,
// systemd/keyshim.socket, launchd/dev.keyshim.plist), compiled in by
// packaging/Packaging.cmake:
// - the systemd unit is a valid unit as shipped (it runs /usr/bin/keyshim);
//   rendering replaces its one ExecStart= line (and, socket-activated, adds
//   Requires= and After= on keyshim.socket);
// - the socket unit listens on 127.0.0.1:8787; rendering replaces its one
//   ListenStream= line;
// - the plist cannot be valid as shipped (launchd expands neither ~ nor
//   $HOME), so it carries @KEYSHIM_BIN@, @KEYSHIM_CONFIG@ and @HOME@.
// Both renderers are plain text functions, testable on any platform.
#include "config/config.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace keyshim::service {

inline constexpr const char* k_systemd_unit_name = "keyshim.service";
inline constexpr const char* k_systemd_socket_name = "keyshim.socket";
inline constexpr const char* k_launchd_label = "dev.keyshim";

// The shipped systemd/keyshim.service, byte for byte.
std::string_view systemd_unit_template();
// The shipped systemd/keyshim.socket, byte for byte.
std::string_view systemd_socket_template();
// The shipped launchd/dev.keyshim.plist, byte for byte.
std::string_view launchd_plist_template();

// The shipped unit with ExecStart= running `BINARY serve -c CONFIG`.
// Both paths must be absolute and free of control characters, and BINARY
// free of quotes and backslashes (std::invalid_argument otherwise).
// `socket_activated` adds Requires=keyshim.socket and After=keyshim.socket.
std::string render_systemd_unit(const std::string& binary_path, const std::string& config_path,
                                bool socket_activated = false);

// The shipped socket unit with ListenStream= on `listen` ("localhost" is
// 127.0.0.1; systemd resolves no names). Throws std::invalid_argument for a
// host that is not loopback or port 0 (which only a process can pick).
std::string render_systemd_socket(const config::ListenAddress& listen);

// The shipped plist with the binary, the pool file and the home directory
// filled in, XML-escaped. Same requirements on the paths as above. With
// `socket`, launchd owns that address (a Sockets entry named "Listeners")
// and starts keyshim at the first connection instead of at login.
std::string render_launchd_plist(const std::string& binary_path, const std::string& config_path,
                                 const std::string& home,
                                 const std::optional<config::ListenAddress>& socket = std::nullopt);

// One ExecStart= argument as systemd reads it back: `%` and `$` doubled (they
// are specifier and variable expansion), double-quoted with C escapes when it
// holds anything but plain path characters.
std::string systemd_exec_quote(std::string_view argument);

// The program of an ExecStart= line. systemd expands specifiers but not
// variables there, and refuses quotes and backslashes in it outright, so
// those throw std::invalid_argument.
std::string systemd_exec_path(std::string_view path);

// Text for an XML element or attribute: & < > " ' escaped.
std::string xml_escape(std::string_view text);

} // namespace keyshim::service
