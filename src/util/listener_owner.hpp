#pragma once
// Who holds a TCP listening socket, read from /proc (Linux), so that
// `keyshim reload` signals only a process that really serves the address it
// asked: whatever answers on a loopback port may belong to another user of
// the machine, and the pid it reports is just a number it chose.
//
// The parsers are pure (tested on fixture text); check_listener_owner reads
// a /proc tree whose root is a parameter (tested on a fake tree).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshim::util {

// One LISTEN row (state 0A) of /proc/net/tcp or /proc/net/tcp6.
struct TcpListener {
  std::string address; // numeric text: "127.0.0.1", "::1", "0.0.0.0"
  int port = 0;
  unsigned uid = 0;        // the uid that created the socket
  std::uint64_t inode = 0; // what /proc/PID/fd/N links to as "socket:[inode]"
};

// The LISTEN rows of /proc/net/tcp text (`ipv6` false) or /proc/net/tcp6
// text (true); the heading and malformed lines are skipped.
std::vector<TcpListener> parse_tcp_listeners(std::string_view text, bool ipv6);

// 12345 for "socket:[12345]"; nothing for any other link.
std::optional<std::uint64_t> socket_inode(std::string_view link);

// The real and effective uid on the "Uid:" line of /proc/PID/status text.
std::optional<std::pair<unsigned, unsigned>> status_uids(std::string_view text);

// Whether `listener` serves `host` ("127.0.0.1", "::1", "localhost"): the
// same address, or a wildcard one of the same family.
bool listener_serves(const TcpListener& listener, const std::string& host, int port);

struct ListenerOwnerQuery {
  long long pid = 0;
  std::string host; // as in the pool file's listen, without brackets
  int port = 0;
  unsigned uid = 0; // the caller's getuid()
  std::string program = "keyshim";
  std::string proc_root = "/proc";
};

// "" when process `pid` runs `program` as `uid` and holds a socket
// listening on host:port that `uid` created; otherwise what did not match,
// as a sentence naming the pid ("pid 1234 does not hold the listening
// socket 127.0.0.1:8787"). A process that made itself non-dumpable, as
// keyshim does, hides its descriptors even from its own user: then the
// socket's owner uid stands in for the descriptor match (only the user's
// own processes can create a socket that uid owns).
std::string check_listener_owner(const ListenerOwnerQuery& query);

} // namespace keyshim::util
