#include "service/unit_templates.hpp"

#include "keyshim/service_templates.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace keyshim::service {
namespace {

constexpr std::string_view k_exec_start = "ExecStart=";
constexpr std::string_view k_listen_stream = "ListenStream=";

// Replaces the one line starting with `key` (at the start of a line) by
// `line`; the shipped files are held to having exactly one by unit tests.
void replace_line(std::string& unit, std::string_view key, const std::string& line, const char* file) {
  std::size_t at = unit.find(fmt::format("\n{}", key));
  if (at == std::string::npos) {
    throw std::logic_error(fmt::format("{} has no {} line", file, key));
  }
  at += 1;
  std::size_t end = unit.find('\n', at);
  unit.replace(at, end == std::string::npos ? std::string::npos : end - at, line);
}

// The address systemd or launchd should listen on: a loopback IP literal
// and a port of its own.
config::ListenAddress socket_address(const config::ListenAddress& listen) {
  if (!config::is_loopback_host(listen.host)) {
    throw std::invalid_argument(
        fmt::format("listen \"{}\" is not a loopback address; keyshim serves loopback only", listen.text()));
  }
  if (listen.port <= 0) {
    throw std::invalid_argument(
        fmt::format("listen \"{}\": a socket unit needs a fixed port; set one in the pool file's [server] "
                    "listen, or install with --no-socket",
                    listen.text()));
  }
  config::ListenAddress address = listen;
  if (address.host == "localhost") {
    address.host = "127.0.0.1";
  }
  return address;
}

// launchd's Sockets entry for `address`; it replaces RunAtLoad and KeepAlive
// in the template, since launchd starts a job with sockets when the first
// connection comes (and again after a crash, at the next one).
std::string launchd_sockets_entry(const config::ListenAddress& address) {
  return fmt::format(R"(  <!-- launchd owns the listening socket (socket activation): keyshim starts
       at the first connection and takes the socket over, and a restart
       never refuses a connection. keyshim serves loopback sockets only. -->
  <key>Sockets</key>
  <dict>
    <key>Listeners</key>
    <dict>
      <key>SockNodeName</key>
      <string>{}</string>
      <key>SockServiceName</key>
      <string>{}</string>
      <key>SockType</key>
      <string>stream</string>
      <key>SockFamily</key>
      <string>{}</string>
    </dict>
  </dict>
)",
                     xml_escape(address.host), address.port,
                     address.host.find(':') == std::string::npos ? "IPv4" : "IPv6");
}

void use_launchd_socket(std::string& plist, const config::ListenAddress& address) {
  std::size_t begin = plist.find("  <key>RunAtLoad</key>\n");
  std::size_t keep_alive = plist.find("<key>KeepAlive</key>", begin == std::string::npos ? 0 : begin);
  constexpr std::string_view k_dict_end = "  </dict>\n";
  std::size_t end = plist.find(k_dict_end, keep_alive == std::string::npos ? plist.size() : keep_alive);
  if (begin == std::string::npos || keep_alive == std::string::npos || end == std::string::npos) {
    throw std::logic_error("launchd/dev.keyshim.plist has no RunAtLoad and KeepAlive entries to replace");
  }
  plist.replace(begin, end + k_dict_end.size() - begin, launchd_sockets_entry(address));
}

// Paths land inside a unit line or an XML text node. A newline would end the
// ExecStart= line (and could inject directives), and XML 1.0 cannot carry
// most control characters even escaped, so both are refused outright.
void require_usable_path(const std::string& path, const char* what) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument(fmt::format("{} \"{}\" is not an absolute path", what, path));
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw std::invalid_argument(
          fmt::format("{} \"{}\" contains a control character; a service file cannot name it", what, path));
    }
  }
}

bool is_plain_exec_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '.' ||
         c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '=' || c == '@' || c == '%' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

void replace_all(std::string& text, std::string_view from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Doubles the characters systemd would expand, then double-quotes with C
// escapes unless every character is a plain path character.
std::string quote_exec_word(std::string_view word, std::string_view doubled) {
  bool plain = !word.empty();
  std::string expanded;
  for (char c : word) {
    plain = plain && is_plain_exec_char(c);
    if (doubled.find(c) != std::string_view::npos) {
      expanded += c;
    }
    expanded += c;
  }
  if (plain) {
    return expanded;
  }
  std::string quoted = "\"";
  for (char c : expanded) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
    }
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

} // namespace

std::string_view systemd_unit_template() {
  return generated::k_systemd_unit;
}

std::string_view systemd_socket_template() {
  return generated::k_systemd_socket;
}

std::string_view launchd_plist_template() {
  return generated::k_launchd_plist;
}

std::string systemd_exec_quote(std::string_view argument) {
  // Arguments get both %-specifier and $VARIABLE expansion, even in quotes.
  return quote_exec_word(argument, "%$");
}

std::string systemd_exec_path(std::string_view path) {
  // systemd's "Executable name contains special characters" check.
  if (path.find_first_of("\"'\\") != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("keyshim binary \"{}\": systemd cannot run a program whose path contains quotes or "
                    "backslashes; move keyshim to a directory without them",
                    path));
  }
  // The program path gets specifier expansion but no variable expansion.
  return quote_exec_word(path, "%");
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
      break;
    }
  }
  return out;
}

std::string render_systemd_unit(const std::string& binary_path, const std::string& config_path,
                                bool socket_activated) {
  require_usable_path(binary_path, "keyshim binary");
  require_usable_path(config_path, "pool file");

  std::string unit(systemd_unit_template());
  replace_line(unit, k_exec_start,
               fmt::format("{}{} serve -c {}", k_exec_start, systemd_exec_path(binary_path),
                           systemd_exec_quote(config_path)),
               "systemd/keyshim.service");
  if (socket_activated) {
    // At the end of [Unit]: starting the service also starts the socket,
    // and stopping or restarting the socket does the same to the service.
    std::size_t at = unit.find("\n\n[Service]");
    if (at == std::string::npos) {
      throw std::logic_error("systemd/keyshim.service has no [Service] section after [Unit]");
    }
    unit.insert(at,
                fmt::format("\n# The listening socket is {0}'s (socket activation).\nRequires={0}\nAfter={0}",
                            k_systemd_socket_name));
  }
  return unit;
}

std::string render_systemd_socket(const config::ListenAddress& listen) {
  std::string unit(systemd_socket_template());
  replace_line(unit, k_listen_stream, fmt::format("{}{}", k_listen_stream, socket_address(listen).text()),
               "systemd/keyshim.socket");
  return unit;
}

std::string render_launchd_plist(const std::string& binary_path, const std::string& config_path,
                                 const std::string& home,
                                 const std::optional<config::ListenAddress>& socket) {
  require_usable_path(binary_path, "keyshim binary");
  require_usable_path(config_path, "pool file");
  require_usable_path(home, "home directory");

  std::string plist(launchd_plist_template());
  replace_all(plist, "@KEYSHIM_BIN@", xml_escape(binary_path));
  replace_all(plist, "@KEYSHIM_CONFIG@", xml_escape(config_path));
  // "/Users/u/" would give "/Users/u//Library/Logs"; harmless, but untidy.
  std::string trimmed_home = home;
  while (trimmed_home.size() > 1 && trimmed_home.back() == '/') {
    trimmed_home.pop_back();
  }
  replace_all(plist, "@HOME@", xml_escape(trimmed_home));
  if (socket) {
    use_launchd_socket(plist, socket_address(*socket));
  }
  return plist;
}

} // namespace keyshim::service
