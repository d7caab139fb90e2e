// `keyshim serve` started by a socket unit: the built binary gets a listening
// socket at fd 3 with LISTEN_FDS=1 and LISTEN_PID set to its own pid, as
// systemd passes it, and must serve that socket and nothing else.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

namespace keyshim::test {
namespace {

// LISTEN_PID must be the pid of the process reading it, which only the child
// knows: a shell sets it to its own pid and then becomes keyshim (exec keeps
// the pid).
const char* const k_set_listen_pid = "LISTEN_PID=$$; export LISTEN_PID; exec \"$@\"";

// A TCP socket bound to `host`:0 (the kernel picks the port), listening or not.
int tcp_socket(const char* host, bool listening) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  ::inet_pton(AF_INET, host, &address.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  if (listening) {
    EXPECT_EQ(::listen(fd, 16), 0);
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_in address{};
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  return ntohs(address.sin_port);
}

bool accepts_connections(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

class SocketActivation : public ::testing::Test {
protected:
  ~SocketActivation() override {
    for (int fd : m_fds) {
      ::close(fd);
    }
  }

  int keep(int fd) {
    m_fds.push_back(fd);
    return fd;
  }

  // A pool whose listen names a port nothing else uses, and whose one key
  // comes from a key_cmd that fails when it can see the passed socket or the
  // LISTEN_* variables (they are keyshim's, not its helpers').
  std::string write_pool() {
    listen_port = unused_loopback_port();
    std::string text = pool_toml(0, "", fmt::format("listen = \"127.0.0.1:{}\"\n", listen_port));
    text.replace(text.find("@UPSTREAM@"), 10, upstream.base_url());
    text +=
        "[[keys]]\nlabel = \"cmd\"\nkey_cmd = [\"/bin/sh\", \"-c\", '"
        "if [ -n \"${LISTEN_FDS}${LISTEN_PID}${LISTEN_FDNAMES}\" ]; then echo LISTEN_ leaked >&2; exit 1; "
        "fi; "
        "case \"$(readlink /proc/$$/fd/3 2>/dev/null)\" in socket:*) echo fd 3 leaked >&2; exit 1;; esac; "
        "printf %s sk-activated-0001']\n";
    return dir.write("keys.toml", text, 0600);
  }

  // keyshim serve with `fd` at 3 and LISTEN_FDS=1, LISTEN_PID its own pid.
  ChildProcess start_activated(int fd, const std::string& pool) {
    RunOptions options;
    options.pass_fds = {fd};
    options.env = {{"LISTEN_FDS", "1"}, {"LISTEN_FDNAMES", "keyshim.socket"}};
    options.unset_env = {"LISTEN_PID"};
    options.timeout = std::chrono::seconds(60);
    return ChildProcess::start({"/bin/sh", "-c", k_set_listen_pid, "sh", KEYSHIM_BINARY, "serve", "-c", pool},
                               options);
  }

  RunResult run_activated(int fd) {
    ChildProcess child = start_activated(fd, write_pool());
    return child.wait();
  }

  FakeUpstream upstream;
  TempDir dir;
  int listen_port = 0;

private:
  std::vector<int> m_fds;
};

TEST_F(SocketActivation, ServesThePassedSocketAndLeavesThePoolFilesAddressUnbound) {
  int fd = keep(tcp_socket("127.0.0.1", true));
  int port = port_of(fd);
  ChildProcess serve = start_activated(fd, write_pool());
  std::string narration = fmt::format("listening on http://127.0.0.1:{} (socket from systemd", port);
  ASSERT_TRUE(serve.wait_for_stderr(narration, std::chrono::seconds(30))) << serve.err();

  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(30));
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res) << serve.err();
  EXPECT_EQ(res->status, 200) << res->body;
  ASSERT_EQ(upstream.request_count(), 1u);
  EXPECT_EQ(upstream.seen()[0].header("Authorization"), "Bearer sk-activated-0001");
  EXPECT_FALSE(accepts_connections(listen_port)) << "the pool file's listen was bound too";

  serve.send_signal(SIGTERM);
  RunResult result = serve.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.all_output().find("sk-activated-0001"), std::string::npos);
}

// The point of the socket unit: between one keyshim and the next, the
// socket stays open (here in the test, as in systemd), so a client that
// connects meanwhile waits in its queue and the next keyshim answers it.
TEST_F(SocketActivation, ARestartRefusesNoConnection) {
  int fd = keep(tcp_socket("127.0.0.1", true));
  int port = port_of(fd);
  std::string pool = write_pool();
  ChildProcess first = start_activated(fd, pool);
  ASSERT_TRUE(first.wait_for_stderr("socket from systemd", std::chrono::seconds(30))) << first.err();
  first.send_signal(SIGTERM);
  ASSERT_EQ(first.wait().exit_code, 0);

  RawConnection conn(port);
  ASSERT_TRUE(conn.send(make_request("GET", "/health")));
  ChildProcess second = start_activated(fd, pool);
  ASSERT_TRUE(conn.read_response(30s)) << second.err();
  EXPECT_EQ(parse_response(conn.received()).status, 200) << conn.received();
  second.send_signal(SIGTERM);
  EXPECT_EQ(second.wait().exit_code, 0);
}

TEST_F(SocketActivation, NamesTheAddressItServesWhenThePoolFileSaysAnother) {
  int fd = keep(tcp_socket("127.0.0.1", true));
  ChildProcess serve = start_activated(fd, write_pool());
  ASSERT_TRUE(serve.wait_for_stderr("keyshim serves that one", std::chrono::seconds(30))) << serve.err();
  EXPECT_NE(serve.err().find(fmt::format("listen = \"127.0.0.1:{}\"", listen_port)), std::string::npos)
      << serve.err();
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

TEST_F(SocketActivation, RefusesASocketThatIsNotOnLoopback) {
  // Bound to every interface but never listening: nothing is exposed.
  RunResult result = run_activated(keep(tcp_socket("0.0.0.0", false)));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("the socket passed by systemd (fd 3) is bound to 0.0.0.0:"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("not to a loopback address"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("ListenStream=127.0.0.1:PORT"), std::string::npos) << result.err;
}

TEST_F(SocketActivation, RefusesASocketThatIsNotListening) {
  RunResult result = run_activated(keep(tcp_socket("127.0.0.1", false)));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("is not listening"), std::string::npos) << result.err;
}

TEST_F(SocketActivation, RefusesADatagramSocketAndAPipe) {
  int udp = keep(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  RunResult result = run_activated(udp);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("is not a TCP stream socket"), std::string::npos) << result.err;

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  keep(pipe_fds[0]);
  keep(pipe_fds[1]);
  result = run_activated(pipe_fds[0]);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("is not a socket"), std::string::npos) << result.err;
}

TEST_F(SocketActivation, SocketsMeantForAnotherProcessAreLeftAloneAndTheFileIsBound) {
  int fd = keep(tcp_socket("127.0.0.1", true));
  RunOptions options;
  options.pass_fds = {fd};
  // LISTEN_PID names some other process (pid 1): the sockets are not ours.
  options.env = {{"LISTEN_FDS", "1"}, {"LISTEN_PID", "1"}};
  options.timeout = std::chrono::seconds(60);
  // A key of its own: fd 3 is not keyshim's here, so its helpers may see it.
  std::string pool = write_pool();
  std::string text = pool_toml(1, "", fmt::format("listen = \"127.0.0.1:{}\"\n", listen_port));
  text.replace(text.find("@UPSTREAM@"), 10, upstream.base_url());
  dir.write("keys.toml", text, 0600);
  ChildProcess serve = ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", pool}, options);
  ASSERT_TRUE(serve.wait_for_stderr(fmt::format("listening on http://127.0.0.1:{} (pool file", listen_port),
                                    std::chrono::seconds(30)))
      << serve.err();
  httplib::Client client("127.0.0.1", listen_port);
  auto res = client.Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  serve.send_signal(SIGTERM);
  EXPECT_EQ(serve.wait().exit_code, 0);
}

} // namespace
} // namespace keyshim::test
