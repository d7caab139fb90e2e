#pragma once
// The one address the benchmark's programs ever use: 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

// 127.0.0.1:port as a socket address (port 0: any free port, for bind).
inline sockaddr_in loopback_v4(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}
