// Reads that leave a socket empty let the next one wait for the loop's
// report instead of trying a recv first; a socket with anything left (bytes,
// or the peer's FIN behind them) is read at once, so nothing waits for a
// report that already came.
#include "relay/socket_read.hpp"

#include <gtest/gtest.h>

#include <boost/asio/write.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <poll.h>

namespace keyshim::relay {
namespace {

constexpr auto k_patience = std::chrono::seconds(5);

struct ReadResult {
  ErrorCode ec;
  std::string bytes;
};

// A loopback connection: `client` writes, `server` is read; the listener
// gives its connections the read hint unless told not to.
class SocketReadTest : public ::testing::Test {
protected:
  // `early` is sent before the server accepts the connection.
  void connect(bool hints = true, std::string_view early = {}) {
    Acceptor acceptor(m_ioc.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    if (hints) {
      enable_read_hints(acceptor.native_handle());
    }
    m_client.connect(acceptor.local_endpoint());
    if (!early.empty()) {
      asio::write(m_client, asio::buffer(early));
    }
    m_server.emplace(acceptor.accept());
  }
  // Sends `bytes` and waits (poll, bounded) until the server's socket holds them.
  void send(std::string_view bytes) {
    asio::write(m_client, asio::buffer(bytes));
    wait_for_server(POLLIN);
  }
  void send_fin() {
    m_client.shutdown(tcp::socket::shutdown_send);
    wait_for_server(POLLRDHUP);
  }
  void wait_for_server(short events) {
    pollfd fd{m_server->native_handle(), events, 0};
    ASSERT_EQ(::poll(&fd, 1, static_cast<int>(std::chrono::milliseconds(k_patience).count())), 1);
  }
  // One read_some of up to `room` bytes, run to its end on the loop.
  std::optional<ReadResult> read(std::size_t room = 64) {
    std::string into(room, '\0');
    std::optional<ReadResult> result;
    read_some(*m_server, asio::buffer(into), [&](const ErrorCode& ec, std::size_t n) {
      result = ReadResult{ec, into.substr(0, n)};
    });
    m_ioc.restart();
    m_ioc.run_for(k_patience);
    if (!result) { // it never came: the read ends here, not in a later test step
      m_server->cancel();
      m_ioc.restart();
      m_ioc.run_for(k_patience);
      return std::nullopt;
    }
    return result;
  }

  asio::io_context m_ioc{1};
  Socket m_client{m_ioc.get_executor()};
  std::optional<Socket> m_server;
};

TEST_F(SocketReadTest, AReadThatEmptiesTheSocketMakesTheNextOneWaitForTheLoop) {
  connect();
  send("hello");
  EXPECT_EQ(read().value_or(ReadResult{}).bytes, "hello");
  EXPECT_FALSE(may_hold_bytes(*m_server));
}

TEST_F(SocketReadTest, BytesSentAfterAnEmptyingReadAreReadWhenTheyCome) {
  connect();
  send("one");
  ASSERT_TRUE(read());
  ASSERT_FALSE(may_hold_bytes(*m_server));
  send("two");
  auto second = read();
  ASSERT_TRUE(second) << "the read waited for a report that never came";
  EXPECT_EQ(second->bytes, "two");
}

TEST_F(SocketReadTest, AReadThatLeavesBytesBehindKeepsTheSocketReadable) {
  connect();
  send("abcdef");
  auto first = read(4);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->bytes, "abcd");
  EXPECT_TRUE(may_hold_bytes(*m_server));
  auto rest = read();
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->bytes, "ef");
}

// Data and the FIN behind it come out of two reads; the loop reported the
// socket readable once, before the first. Had that read marked the socket
// empty, the end of the stream would never be reported again.
TEST_F(SocketReadTest, AFinBehindTheBytesIsMetByTheNextRead) {
  connect();
  send("last words");
  send_fin();
  auto first = read();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->bytes, "last words");
  EXPECT_TRUE(may_hold_bytes(*m_server));
  auto end = read();
  ASSERT_TRUE(end) << "the end of the stream was never reported";
  EXPECT_EQ(end->ec, asio::error::eof);
}

TEST_F(SocketReadTest, WithoutTheHintAShortReadLeavesTheSocketReadable) {
  connect(false);
  send("hello");
  EXPECT_EQ(read().value_or(ReadResult{}).bytes, "hello");
  EXPECT_TRUE(may_hold_bytes(*m_server));
}

// An accepted socket is marked empty before its first read: what came
// before its registration with the loop is reported by the next poll.
TEST_F(SocketReadTest, ARequestSentBeforeTheAcceptIsReadAfterTheMark) {
  connect(true, "GET / HTTP/1.1\r\n\r\n");
  wait_for_server(POLLIN);
  mark_emptied(*m_server);
  auto first = read();
  ASSERT_TRUE(first) << "the bytes there at the registration were never reported";
  EXPECT_EQ(first->bytes, "GET / HTTP/1.1\r\n\r\n");
}

TEST_F(SocketReadTest, ReadingWithoutWaitingFindsNothingAndMarksTheSocket) {
  connect();
  std::string into(16, '\0');
  ErrorCode ec;
  EXPECT_EQ(read_without_waiting(*m_server, asio::buffer(into), ec), 0U);
  EXPECT_FALSE(ec);
  EXPECT_FALSE(may_hold_bytes(*m_server));
}

TEST_F(SocketReadTest, ReadingWithoutWaitingMeetsTheEndOfTheStreamEveryTime) {
  connect();
  send_fin();
  std::string into(16, '\0');
  for (int time = 0; time < 2; ++time) {
    ErrorCode ec;
    EXPECT_EQ(read_without_waiting(*m_server, asio::buffer(into), ec), 0U);
    EXPECT_EQ(ec, asio::error::eof) << "read " << time;
    EXPECT_TRUE(may_hold_bytes(*m_server)) << "read " << time;
  }
}

} // namespace
} // namespace keyshim::relay
