#pragma once
// A byte-level HTTP client for tests that must see exactly what keyshim
// wrote: chunk framing, an abnormal end, a refused head.
#include <chrono>
#include <string>

namespace keyshim::test {

using namespace std::chrono_literals;

class RawConnection {
public:
  explicit RawConnection(int port, const std::string& host = "127.0.0.1");
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool send(const std::string& bytes);
  // Read until `needle` appears in everything read so far (or close/timeout).
  bool read_until(const std::string& needle, std::chrono::milliseconds timeout = 10s);
  // Read until the server closes the connection; false on timeout.
  bool read_to_close(std::chrono::milliseconds timeout = 10s);
  // Read until one whole response (by its framing) has arrived, or close/timeout.
  bool read_response(std::chrono::milliseconds timeout = 10s);
  // Read once, whatever arrives next; false on close or timeout.
  bool read_more(std::chrono::milliseconds timeout = 10s);
  // Close our side now (a client that gives up).
  void close();

  const std::string& received() const { return m_received; }

private:
  int m_fd = -1;
  std::string m_received;
};

struct RawResponse {
  int status = 0;
  std::string head; // status line and headers
  std::string body; // de-chunked body
  bool chunked = false;
  bool complete = false; // the body ended properly (final chunk or full Content-Length)
  std::string header(const std::string& name) const;
};

// A loopback port nothing is bound to right now, for a keyshim child to
// listen on: a random one below the kernel's ephemeral range, where no
// test's outgoing connection can take it between this call and the child's
// bind (a port the kernel chose for bind(0) can be, and was, about once in
// a thousand runs of a test beside others). Else what bind(0) chose; 0 when
// no port could be had.
int unused_loopback_port();

// Whether a server on 127.0.0.1:`port` answers GET /health within about
// 5 s: a keyshim child started by a test is serving.
bool wait_for_health(int port);

// Parse one response from the start of `bytes`.
RawResponse parse_response(const std::string& bytes);

// "POST /path HTTP/1.1" request with Host 127.0.0.1 and a Content-Length body.
std::string make_request(const std::string& method, const std::string& target, const std::string& body = "",
                         const std::string& extra_headers = "");

} // namespace keyshim::test
