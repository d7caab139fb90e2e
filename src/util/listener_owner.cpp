#include "util/listener_owner.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace keyshim::util {
namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    std::size_t start = line.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) {
      break;
    }
    std::size_t end = line.find_first_of(" \t", start);
    end = end == std::string_view::npos ? line.size() : end;
    fields.push_back(line.substr(start, end - start));
    at = end;
  }
  return fields;
}

template <typename Number> std::optional<Number> number(std::string_view text, int base) {
  Number value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

// The kernel prints each 32-bit word of the address as the number it is in
// memory on this host, so reading the words back as numbers and copying
// them gives the address's bytes in network order again.
std::optional<std::string> address_text(std::string_view hex, bool ipv6) {
  std::size_t words = ipv6 ? 4 : 1;
  if (hex.size() != words * 8) {
    return std::nullopt;
  }
  unsigned char bytes[16] = {};
  for (std::size_t word = 0; word < words; ++word) {
    std::optional<std::uint32_t> value = number<std::uint32_t>(hex.substr(word * 8, 8), 16);
    if (!value) {
      return std::nullopt;
    }
    std::memcpy(bytes + word * 4, &*value, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes, text, sizeof text) == nullptr) {
    return std::nullopt;
  }
  return std::string(text);
}

// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
std::optional<TcpListener> parse_row(std::string_view line, bool ipv6) {
  std::vector<std::string_view> fields = fields_of(line);
  if (fields.size() < 10 || fields[3] != "0A") {
    return std::nullopt;
  }
  std::string_view local = fields[1];
  std::size_t colon = local.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  std::optional<std::string> address = address_text(local.substr(0, colon), ipv6);
  std::optional<int> port = number<int>(local.substr(colon + 1), 16);
  std::optional<unsigned> uid = number<unsigned>(fields[7], 10);
  std::optional<std::uint64_t> inode = number<std::uint64_t>(fields[9], 10);
  if (!address || !port || !uid || !inode) {
    return std::nullopt;
  }
  return TcpListener{*address, *port, *uid, *inode};
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::optional<std::string> read_link(const std::string& path) {
  char buffer[4096];
  ssize_t size = ::readlink(path.c_str(), buffer, sizeof buffer);
  if (size < 0) {
    return std::nullopt;
  }
  return std::string(buffer, static_cast<std::size_t>(size));
}

std::string address_for_humans(const std::string& host, int port) {
  return host.find(':') == std::string::npos ? fmt::format("{}:{}", host, port)
                                             : fmt::format("[{}]:{}", host, port);
}

std::vector<TcpListener> listeners_of(const ListenerOwnerQuery& query) {
  std::vector<TcpListener> out;
  for (bool ipv6 : {false, true}) {
    std::optional<std::string> text = read_text(query.proc_root + (ipv6 ? "/net/tcp6" : "/net/tcp"));
    for (const TcpListener& row : parse_tcp_listeners(text.value_or(""), ipv6)) {
      if (listener_serves(row, query.host, query.port)) {
        out.push_back(row);
      }
    }
  }
  return out;
}

// What the process runs: its executable's name, or when that link is hidden
// (a non-dumpable process), the name it gave itself.
std::string program_of(const std::string& dir) {
  if (std::optional<std::string> exe = read_link(dir + "/exe")) {
    const std::string deleted = " (deleted)"; // replaced by an upgrade while running
    if (exe->size() > deleted.size() && exe->ends_with(deleted)) {
      exe->resize(exe->size() - deleted.size());
    }
    return *exe;
  }
  std::string comm = read_text(dir + "/comm").value_or("");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\r')) {
    comm.pop_back();
  }
  return comm;
}

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "" when one of the process's descriptors is one of `sockets`, or its
// descriptors cannot be listed (see the header); else why not.
std::string check_descriptors(const ListenerOwnerQuery& query, const std::string& dir,
                              const std::vector<TcpListener>& sockets, const std::string& where) {
  DIR* fds = ::opendir((dir + "/fd").c_str());
  if (fds == nullptr) {
    return errno == EACCES || errno == EPERM
               ? std::string()
               : fmt::format("pid {} has no descriptors to check ({})", query.pid, std::strerror(errno));
  }
  bool held = false;
  while (const dirent* entry = ::readdir(fds)) {
    std::optional<std::string> link = read_link(dir + "/fd/" + entry->d_name);
    std::optional<std::uint64_t> inode = link ? socket_inode(*link) : std::nullopt;
    held = held || (inode && std::any_of(sockets.begin(), sockets.end(),
                                         [&](const TcpListener& socket) { return socket.inode == *inode; }));
  }
  ::closedir(fds);
  return held ? std::string() : fmt::format("pid {} does not hold the listening socket {}", query.pid, where);
}

} // namespace

std::vector<TcpListener> parse_tcp_listeners(std::string_view text, bool ipv6) {
  std::vector<TcpListener> out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (std::optional<TcpListener> row = parse_row(line, ipv6)) {
      out.push_back(std::move(*row));
    }
  }
  return out;
}

std::optional<std::uint64_t> socket_inode(std::string_view link) {
  constexpr std::string_view prefix = "socket:[";
  if (!link.starts_with(prefix) || !link.ends_with("]")) {
    return std::nullopt;
  }
  return number<std::uint64_t>(link.substr(prefix.size(), link.size() - prefix.size() - 1), 10);
}

std::optional<std::pair<unsigned, unsigned>> status_uids(std::string_view text) {
  std::size_t at = text.starts_with("Uid:") ? 0 : text.find("\nUid:");
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view line = text.substr(text.find(':', at) + 1);
  line = line.substr(0, line.find('\n'));
  std::vector<std::string_view> fields = fields_of(line);
  std::optional<unsigned> real = fields.size() >= 2 ? number<unsigned>(fields[0], 10) : std::nullopt;
  std::optional<unsigned> effective = fields.size() >= 2 ? number<unsigned>(fields[1], 10) : std::nullopt;
  if (!real || !effective) {
    return std::nullopt;
  }
  return std::make_pair(*real, *effective);
}

bool listener_serves(const TcpListener& listener, const std::string& host, int port) {
  if (listener.port != port) {
    return false;
  }
  bool v6 = listener.address.find(':') != std::string::npos;
  if (listener.address == (v6 ? "::" : "0.0.0.0")) {
    return host == "localhost" || (host.find(':') != std::string::npos) == v6;
  }
  if (host == "localhost") {
    return listener.address == "127.0.0.1" || listener.address == "::1";
  }
  unsigned char bytes[16] = {};
  char text[INET6_ADDRSTRLEN] = {};
  int family = host.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (inet_pton(family, host.c_str(), bytes) != 1 || inet_ntop(family, bytes, text, sizeof text) == nullptr) {
    return false;
  }
  return listener.address == text;
}

std::string check_listener_owner(const ListenerOwnerQuery& query) {
  const std::string where = address_for_humans(query.host, query.port);
  const std::string dir = fmt::format("{}/{}", query.proc_root, query.pid);

  // 1. The process: alive here, ours, and the program.
  std::optional<std::string> status = read_text(dir + "/status");
  if (query.pid <= 0 || !status) {
    return fmt::format("pid {} is not running here (no {}): is keyshim in another container or PID "
                       "namespace?",
                       query.pid, dir);
  }
  std::optional<std::pair<unsigned, unsigned>> uids = status_uids(*status);
  if (!uids || uids->first != query.uid || uids->second != query.uid) {
    return fmt::format("pid {} runs as uid {}, not as you (uid {})", query.pid,
                       uids ? std::to_string(uids->first) : std::string("unknown"), query.uid);
  }
  std::string program = program_of(dir);
  if (base_name(program) != query.program) {
    return fmt::format("pid {} is not {} (it runs {})", query.pid, query.program,
                       program.empty() ? std::string("something unknown") : program);
  }

  // 2. The socket: listening on the address, created by this user.
  std::vector<TcpListener> sockets = listeners_of(query);
  if (sockets.empty()) {
    return fmt::format("nothing listens on {} in {}/net/tcp", where, query.proc_root);
  }
  std::vector<TcpListener> ours;
  std::copy_if(sockets.begin(), sockets.end(), std::back_inserter(ours),
               [&](const TcpListener& socket) { return socket.uid == query.uid; });
  if (ours.empty()) {
    return fmt::format("the socket listening on {} belongs to uid {}, not to you (uid {})", where,
                       sockets.front().uid, query.uid);
  }

  // 3. The process holds that socket.
  return check_descriptors(query, dir, ours, where);
}

} // namespace keyshim::util
