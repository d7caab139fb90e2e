// Malformed, ambiguous or oversized requests: exactly one refusal, then
// keyshim closes the connection, and nothing reaches the upstream. Each case
// is also sent with a valid request right behind it in the same write: once a
// connection carried bytes keyshim could not frame, nothing after them on it
// may be trusted, so that request must not be forwarded either.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

namespace keyshim::test {
namespace {

// A refusal is written at once; this bounds a core that never answers or
// never closes.
constexpr auto k_refusal_wait = 5s;
constexpr std::size_t k_body_limit = 65536;

const std::string k_valid_request = "GET /v1/smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// Bytes as a readable one-liner for failure messages.
std::string printable(const std::string& bytes, std::size_t max = 300) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return bytes.size() > max ? out + "..." : out;
}

// The length of the first response in `bytes` by its own framing; npos while
// it is incomplete.
std::size_t first_response_length(const std::string& bytes) {
  std::size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return std::string::npos;
  }
  std::size_t at = head_end + 4;
  RawResponse res = parse_response(bytes);
  if (res.chunked) {
    while (true) {
      std::size_t line_end = bytes.find("\r\n", at);
      if (line_end == std::string::npos) {
        return std::string::npos;
      }
      std::size_t size = std::stoul(bytes.substr(at, line_end - at), nullptr, 16);
      at = line_end + 2;
      if (size == 0) {
        return bytes.compare(at, 2, "\r\n") == 0 ? at + 2 : std::string::npos;
      }
      at += size + 2;
    }
  }
  std::string length = res.header("Content-Length");
  if (length.empty()) {
    return bytes.size(); // the body runs to the close
  }
  at += std::stoul(length);
  return at <= bytes.size() ? at : std::string::npos;
}

class StrictRequests : public ::testing::Test {
protected:
  // Sends `request` on a fresh connection and checks the answer: one response
  // whose status is in `allowed`, the connection closed by keyshim, nothing
  // after that response. Then the same again with a valid request behind it
  // in the same write. Then checks the upstream saw neither.
  void expect_refused(const std::string& request, const std::vector<int>& allowed = {400}) {
    SCOPED_TRACE("request: " + printable(request));
    {
      SCOPED_TRACE("alone");
      expect_one_refusal_then_close(request, allowed);
    }
    {
      SCOPED_TRACE("followed by a valid request in the same write");
      expect_one_refusal_then_close(request + k_valid_request, allowed);
    }
    expect_nothing_forwarded();
  }

  void expect_one_refusal_then_close(const std::string& bytes, const std::vector<int>& allowed) {
    RawConnection conn(m_shim.port());
    conn.send(bytes); // may fail part-way once keyshim has refused and closed: allowed
    bool closed = conn.read_to_close(k_refusal_wait);
    const std::string& received = conn.received();
    RawResponse res = parse_response(received);
    EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), res.status) != allowed.end())
        << "status " << res.status << ", received: " << printable(received);
    EXPECT_TRUE(closed) << "keyshim must close the connection after a refusal; received: "
                        << printable(received);
    std::size_t length = first_response_length(received);
    ASSERT_NE(length, std::string::npos) << "incomplete response: " << printable(received);
    EXPECT_EQ(printable(received.substr(length)), "") << "nothing may follow the one refusal";
  }

  // A valid request on a fresh connection is answered, and it is all the
  // upstream saw since the last check: the refused requests (and what came
  // behind them) never reached it. Its answer also shows keyshim kept serving.
  void expect_nothing_forwarded() {
    RawConnection conn(m_shim.port());
    conn.send(make_request("GET", "/v1/after-refusal", "", "Connection: close\r\n"));
    ASSERT_TRUE(conn.read_response(10s)) << printable(conn.received());
    EXPECT_EQ(parse_response(conn.received()).status, 200);
    std::vector<SeenRequest> seen = m_upstream.seen();
    for (std::size_t i = m_checked; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].target, "/v1/after-refusal")
          << "forwarded: " << seen[i].method << " " << seen[i].target;
    }
    EXPECT_EQ(seen.size(), m_checked + 1) << "requests forwarded since the last check";
    m_checked = seen.size();
  }

  FakeUpstream m_upstream;
  Shim m_shim{pool_toml(1, "", "max_request_body = " + std::to_string(k_body_limit) + "\n"),
              m_upstream.base_url()};
  std::size_t m_checked = 0; // upstream requests already accounted for
};

std::string post(const std::string& fields, const std::string& body) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + "\r\n" + body;
}

// "5\r\nhello\r\n0\r\n\r\n": 15 bytes.
const std::string k_chunked_hello = "5\r\nhello\r\n0\r\n\r\n";

TEST_F(StrictRequests, WhitespaceBeforeColonIsRefusedAndTheConnectionClosed) {
  // RFC 9112 §5.1: a server MUST reject such a field with 400. Read as a name
  // with a space in it, each one slips past a name-based rule.
  expect_refused(post("Content-Length: 15\r\nTransfer-Encoding : chunked\r\n", k_chunked_hello));
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost : evil.com\r\n\r\n");
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization : Bearer x\r\n\r\n");
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tab\t: 1\r\n\r\n");
}

TEST_F(StrictRequests, ObsFoldIsRefusedAndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: one\r\n two\r\n\r\n");
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: one\r\n\ttwo\r\n\r\n");
}

TEST_F(StrictRequests, NulInAFieldValueIsRefusedAndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a" + std::string(1, '\0') + "b\r\n\r\n");
}

TEST_F(StrictRequests, BareCrInAFieldValueIsRefusedAndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rb\r\n\r\n");
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rX-Evil: 1\r\n\r\n");
}

TEST_F(StrictRequests, ContentLengthWithTransferEncodingIsRefusedAndTheConnectionClosed) {
  // RFC 9112 §6.1: a proxy must not forward both; refusing is the safe side.
  expect_refused(post("Content-Length: 15\r\nTransfer-Encoding: chunked\r\n", k_chunked_hello));
  expect_refused(post("Transfer-Encoding: chunked\r\nContent-Length: 15\r\n", k_chunked_hello));
}

TEST_F(StrictRequests, TwoDifferentContentLengthsAreRefusedAndTheConnectionClosed) {
  expect_refused(post("Content-Length: 3\r\nContent-Length: 4\r\n", "abcd"));
  expect_refused(post("Content-Length: 3, 4\r\n", "abcd"));
}

TEST_F(StrictRequests, TransferEncodingOtherThanChunkedIsRefusedAndTheConnectionClosed) {
  // RFC 9112 §6.3: chunked not last means the length cannot be known: 400 and
  // close. 501 (an unsupported coding) is also a refusal.
  expect_refused(post("Transfer-Encoding: chunked, gzip\r\n", k_chunked_hello), {400, 501});
  expect_refused(post("Transfer-Encoding: gzip\r\n", k_chunked_hello), {400, 501});
}

TEST_F(StrictRequests, TransferEncodingInHttp10IsRefusedAndTheConnectionClosed) {
  expect_refused(
      "POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
      k_chunked_hello);
}

TEST_F(StrictRequests, BadChunkSizeIsRefusedAndTheConnectionClosed) {
  expect_refused(post("Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n"));
  expect_refused(post("Transfer-Encoding: chunked\r\n", "-1\r\nhello\r\n0\r\n\r\n"));
}

TEST_F(StrictRequests, AbsoluteFormTargetIsRefusedAndTheConnectionClosed) {
  expect_refused("GET http://evil/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  expect_refused("GET http://127.0.0.1/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

TEST_F(StrictRequests, ConnectIsRefusedAndTheConnectionClosed) {
  expect_refused("CONNECT a:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", {400, 405, 501});
}

TEST_F(StrictRequests, TraceIsRefusedAndTheConnectionClosed) {
  expect_refused("TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", {400, 405, 501});
  expect_refused("TRACE /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", {400, 405, 501});
}

TEST_F(StrictRequests, MissingHostIsRefusedAndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\n\r\n");
}

TEST_F(StrictRequests, TwoHostHeadersAreRefusedAndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n");
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.com\r\n\r\n");
}

TEST_F(StrictRequests, ChunkedBodyOverTheLimitGetsOne413AndTheConnectionClosed) {
  std::string body;
  const std::string chunk(8192, 'b');
  for (std::size_t sent = 0; sent <= 3 * k_body_limit; sent += chunk.size()) {
    body += "2000\r\n" + chunk + "\r\n";
  }
  body += "0\r\n\r\n";
  expect_refused(post("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", body), {413});
}

TEST_F(StrictRequests, DeclaredContentLengthOverTheLimitGets413BeforeTheBodyIsSent) {
  // Only the head is sent: the answer must not wait for a body that is never coming.
  expect_one_refusal_then_close(
      post("Content-Type: application/json\r\nContent-Length: " + std::to_string(k_body_limit + 1) + "\r\n",
           ""),
      {413});
  expect_nothing_forwarded();
}

TEST_F(StrictRequests, BodyOfExactlyTheLimitIsForwardedIntact) {
  std::string body(k_body_limit, 'x');
  RawConnection conn(m_shim.port());
  conn.send(make_request("POST", "/v1/chat/completions", body));
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_EQ(parse_response(conn.received()).status, 200);
  ASSERT_EQ(m_upstream.request_count(), 1u);
  EXPECT_TRUE(m_upstream.seen()[0].body == body);
}

TEST_F(StrictRequests, HeadOver64KiBGets431AndTheConnectionClosed) {
  expect_refused("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(70 * 1024, 'h') +
                     "\r\n\r\n",
                 {431});
}

TEST_F(StrictRequests, HeadJustUnder64KiBIsForwarded) {
  std::string fields;
  for (int i = 0; i < 10; ++i) {
    fields += "X-Filler-" + std::to_string(i) + ": " + std::string(6000, static_cast<char>('a' + i)) + "\r\n";
  }
  RawConnection conn(m_shim.port());
  conn.send(make_request("GET", "/v1/models", "", fields));
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_EQ(parse_response(conn.received()).status, 200);
  ASSERT_EQ(m_upstream.request_count(), 1u);
  EXPECT_EQ(m_upstream.seen()[0].header("X-Filler-9"), std::string(6000, 'j'));
}

// Connections that connect and send nothing. Each holds a socket, never a
// request; all are closed when this goes.
class SilentConnections {
public:
  SilentConnections() = default;
  ~SilentConnections() {
    for (int fd : m_fds) {
      ::close(fd);
    }
  }
  SilentConnections(const SilentConnections&) = delete;
  SilentConnections& operator=(const SilentConnections&) = delete;

  // Opens `n` connections to 127.0.0.1:`port`, all handshakes bounded by `timeout`
  // together. How many are open.
  std::size_t open(int port, std::size_t n, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (std::size_t i = 0; i < n; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        break;
      }
      m_fds.push_back(fd);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        continue;
      }
      if (errno != EINPROGRESS) {
        break;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof error;
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1 ||
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
        break;
      }
    }
    return m_fds.size();
  }

private:
  std::vector<int> m_fds;
};

// The head deadline itself (408 after 30 s) is the core's unit test, on a fake
// clock; here: silent connections cost nothing to anyone else.
TEST_F(StrictRequests, SixHundredSilentConnectionsDoNotDelayANormalRequest) {
  constexpr std::size_t k_silent = 600;
  // Both ends of every connection live in this process.
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < 2 * k_silent + 256) {
    GTEST_SKIP() << "open-file limit " << files.rlim_cur << " is too low for " << k_silent << " connections";
  }
  SilentConnections silent;
  ASSERT_EQ(silent.open(m_shim.port(), k_silent, 20s), k_silent);

  RawConnection conn(m_shim.port());
  conn.send(make_request("GET", "/v1/models", "", "Connection: close\r\n"));
  bool answered = conn.read_response(10s);

  EXPECT_TRUE(answered) << "a normal request waited behind silent connections";
  EXPECT_EQ(parse_response(conn.received()).status, 200);
  EXPECT_EQ(m_upstream.request_count(), 1u);
}

} // namespace
} // namespace keyshim::test
