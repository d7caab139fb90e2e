// The CONNECT step against a scripted proxy on 127.0.0.1: what keyshim sends,
// and how each kind of reply ends (tunnel open, refusal, oversized or
// overlong reply). The end-to-end tests run a real proxy (tinyproxy).
#include "relay/proxy_tunnel.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <thread>

namespace keyshim::relay {
namespace {

using namespace std::chrono_literals;

config::ProxyUrl parse(const std::string& text) {
  std::string error;
  std::optional<config::ProxyUrl> url = config::parse_proxy_url(text, error);
  EXPECT_TRUE(url) << error;
  return url.value_or(config::ProxyUrl{});
}

// Accepts one connection, reads the request head, writes `reply`, and closes
// unless `hold` (then it waits for the client to close).
class ScriptedProxy {
public:
  ScriptedProxy(std::string reply, bool hold) : m_reply(std::move(reply)), m_hold(hold) {
    m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(m_fd, 1) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen";
    }
    m_port = ntohs(addr.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~ScriptedProxy() {
    ::shutdown(m_fd, SHUT_RDWR);
    m_thread.join();
    ::close(m_fd);
  }
  ScriptedProxy(const ScriptedProxy&) = delete;
  ScriptedProxy& operator=(const ScriptedProxy&) = delete;

  int port() const { return m_port; }
  // The request head it read.
  std::string request() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_request;
  }

private:
  void serve() {
    int conn = ::accept(m_fd, nullptr, nullptr);
    if (conn < 0) {
      return;
    }
    char buf[4096];
    std::string head;
    while (head.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) {
        break;
      }
      head.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_request = head;
    }
    std::size_t sent = 0;
    while (sent < m_reply.size()) {
      ssize_t n = ::send(conn, m_reply.data() + sent, m_reply.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      sent += static_cast<std::size_t>(n);
    }
    if (m_hold) {
      while (::recv(conn, buf, sizeof buf, 0) > 0) {
      }
    }
    ::close(conn);
  }

  std::string m_reply;
  bool m_hold;
  int m_fd = -1;
  int m_port = 0;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::string m_request;
};

// Connect to `proxy`, run open_tunnel for localhost:4433 and return its
// verdict. A 10 s timer bounds the run whatever the proxy does.
std::string tunnel(const ScriptedProxy& proxy, const std::string& proxy_url = "") {
  asio::io_context ioc{1};
  Socket socket(ioc.get_executor());
  ErrorCode ec;
  socket.connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(proxy.port())), ec);
  EXPECT_FALSE(ec) << ec.message();
  Timer guard(ioc.get_executor());
  guard.expires_after(10s);
  guard.async_wait([&](const ErrorCode& e) {
    if (!e) {
      ADD_FAILURE() << "the tunnel attempt did not finish";
      socket.close();
    }
  });
  std::optional<std::string> result;
  config::ProxyUrl url =
      parse(proxy_url.empty() ? "http://127.0.0.1:" + std::to_string(proxy.port()) : proxy_url);
  open_tunnel(socket, url, "localhost", 4433, [&](const std::string& failure) {
    result = failure;
    guard.cancel();
    socket.close(); // the fake proxy may be holding the connection open
  });
  ioc.run();
  EXPECT_TRUE(result.has_value());
  return result.value_or("(no result)");
}

TEST(ConnectRequest, NamesTheUpstreamInTheLineAndTheHostField) {
  EXPECT_EQ(connect_request(parse("http://proxy:3128"), "api.openai.com", 443),
            "CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n");
  EXPECT_EQ(connect_request(parse("http://proxy:3128"), "2001:db8::1", 8443),
            "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\n\r\n");
}

TEST(ConnectRequest, CarriesBasicCredentialsOnlyWhenTheUrlHasThem) {
  EXPECT_EQ(connect_request(parse("http://u:p@proxy:3128"), "h", 443),
            "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n");
}

TEST(ProxyTunnel, OpensOnA2xxReplyAndSendsExactlyTheConnectRequest) {
  ScriptedProxy proxy("HTTP/1.0 200 Connection established\r\nProxy-agent: test\r\n\r\n", true);
  EXPECT_EQ(tunnel(proxy), "");
  EXPECT_EQ(proxy.request(), "CONNECT localhost:4433 HTTP/1.1\r\nHost: localhost:4433\r\n\r\n");
}

TEST(ProxyTunnel, SendsTheCredentials) {
  ScriptedProxy proxy("HTTP/1.1 200 OK\r\n\r\n", true);
  EXPECT_EQ(tunnel(proxy, "http://user:pa%20ss@127.0.0.1:" + std::to_string(proxy.port())), "");
  // base64("user:pa ss")
  EXPECT_NE(proxy.request().find("\r\nProxy-Authorization: Basic dXNlcjpwYSBzcw==\r\n"), std::string::npos)
      << proxy.request();
}

TEST(ProxyTunnel, ANon2xxReplyIsARefusalNamingTheProxyAndStatus) {
  ScriptedProxy proxy("HTTP/1.1 403 Forbidden\r\nContent-Length: 5\r\n\r\nnope!", false);
  EXPECT_EQ(tunnel(proxy),
            "proxy 127.0.0.1:" + std::to_string(proxy.port()) + " refused CONNECT: 403 Forbidden");
}

TEST(ProxyTunnel, A407SaysWhereCredentialsGoWithoutShowingThem) {
  ScriptedProxy anonymous("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", false);
  std::string failure = tunnel(anonymous);
  EXPECT_NE(failure.find("407 Proxy Authentication Required; give them in the proxy URL"), std::string::npos)
      << failure;
  ScriptedProxy wrong("HTTP/1.1 401 Unauthorized\r\n\r\n", false); // tinyproxy's answer
  failure = tunnel(wrong, "http://user:hunter2@127.0.0.1:" + std::to_string(wrong.port()));
  EXPECT_NE(failure.find("check the user and password"), std::string::npos) << failure;
  EXPECT_EQ(failure.find("hunter2"), std::string::npos) << failure;
  EXPECT_EQ(failure.find("user"), failure.find("user and password")) << failure;
}

TEST(ProxyTunnel, AReasonPhraseIsShownAsPrintableAscii) {
  // Beast refuses control characters in a reason phrase; bytes over 0x7f pass.
  ScriptedProxy proxy("HTTP/1.1 502 Bad Gateway \xc3\xa9t\xff\r\n\r\n", false);
  std::string failure = tunnel(proxy);
  EXPECT_NE(failure.find("refused CONNECT: 502 Bad Gateway ??t?"), std::string::npos) << failure;
}

TEST(ProxyTunnel, BytesAfterTheReplyHeadFailTheTunnel) {
  ScriptedProxy proxy("HTTP/1.1 200 OK\r\n\r\nsurprise", true);
  std::string failure = tunnel(proxy);
  EXPECT_NE(failure.find("sent 8 unexpected bytes after its CONNECT reply"), std::string::npos) << failure;
}

TEST(ProxyTunnel, AReplyHeadOver16KiBFailsTheTunnel) {
  std::string reply = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 400; ++i) {
    reply += "X-Padding-" + std::to_string(i) + ": " + std::string(40, 'x') + "\r\n";
  }
  reply += "\r\n";
  ASSERT_GT(reply.size(), k_max_proxy_reply);
  ScriptedProxy proxy(reply, true);
  std::string failure = tunnel(proxy);
  EXPECT_NE(failure.find("CONNECT reply head over 16 KiB"), std::string::npos) << failure;
}

TEST(ProxyTunnel, AProxyThatHangsUpWithoutAnsweringFailsTheTunnel) {
  ScriptedProxy proxy("", false);
  std::string failure = tunnel(proxy);
  EXPECT_NE(failure.find("closed the connection without answering CONNECT"), std::string::npos) << failure;
}

TEST(ProxyTunnel, AGarbledReplyFailsTheTunnel) {
  ScriptedProxy proxy("SSH-2.0-OpenSSH_9.2\r\n\r\n", false);
  std::string failure = tunnel(proxy);
  EXPECT_NE(failure.find("gave no usable answer to CONNECT"), std::string::npos) << failure;
}

} // namespace
} // namespace keyshim::relay
