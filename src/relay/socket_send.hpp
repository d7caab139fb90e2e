#pragma once
// A send that never waits, for the writes that usually complete at once (a
// response piece to the client, a request to the upstream): MSG_DONTWAIT on
// the one call, where switching the socket to non-blocking mode for it cost
// an ioctl per connection on top of Asio's own; and retry_interrupted, which
// it and the TLS socket's BIO make their system calls through. Event-loop
// thread only.
#include "relay/beast.hpp"

#include <cerrno>
#include <cstddef>
#include <span>

#include <sys/types.h>

namespace keyshim::relay {

// `call()`, a system call that returns -1 and sets errno when it fails, made
// again while it is interrupted (EINTR), at most k_interrupted_retries times:
// its last result.
inline constexpr int k_interrupted_retries = 8;
template <class Call> ssize_t retry_interrupted(Call call) {
  ssize_t result = -1;
  for (int tries = 0; tries < k_interrupted_retries; ++tries) {
    result = call();
    if (result >= 0 || errno != EINTR) {
      break;
    }
  }
  return result;
}

// As much of `buffers` (at most 8) as the socket takes now; a full socket
// is no error (0 bytes, `ec` clear), any other failure is `ec`. Never SIGPIPE.
std::size_t send_without_waiting(Socket& socket, std::span<const asio::const_buffer> buffers, ErrorCode& ec);

} // namespace keyshim::relay
