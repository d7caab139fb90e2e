// How much one read from an upstream connection may take: a stream that
// fills its reads gets wider ones, a stream of small events keeps the
// starting room, and a TLS connection (one record per read) never widens.
#include "relay/upstream_conn.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string_view>

namespace keyshim::relay {
namespace {

std::shared_ptr<UpstreamConn> plain_conn(asio::io_context& ioc) {
  return std::make_shared<UpstreamConn>(ioc.get_executor(), "http://127.0.0.1:1|", nullptr);
}

TEST(UpstreamConnBuffer, APlainStreamThatFillsItsReadsGetsWiderReads) {
  asio::io_context ioc{1};
  auto conn = plain_conn(ioc);
  ASSERT_EQ(conn->buffer().capacity(), k_read_bytes);
  conn->note_body_piece(k_read_bytes - 100);
  EXPECT_GE(conn->buffer().capacity(), k_wide_read_bytes);
}

TEST(UpstreamConnBuffer, SmallEventsKeepTheStartingRoom) {
  asio::io_context ioc{1};
  auto conn = plain_conn(ioc);
  for (int event = 0; event < 1000; ++event) {
    conn->note_body_piece(1024);
  }
  EXPECT_EQ(conn->buffer().capacity(), k_read_bytes);
}

TEST(UpstreamConnBuffer, WideningKeepsTheBytesNotYetParsed) {
  asio::io_context ioc{1};
  auto conn = plain_conn(ioc);
  constexpr std::string_view k_cut = "40\r\ndata: cut ";
  auto space = conn->buffer().prepare(k_cut.size());
  std::memcpy(space.data(), k_cut.data(), k_cut.size());
  conn->buffer().commit(k_cut.size());
  conn->note_body_piece(k_read_bytes - 100);
  const char* data = static_cast<const char*>(conn->buffer().data().data());
  EXPECT_EQ(std::string_view(data, conn->buffer().size()), k_cut);
}

TEST(UpstreamConnBuffer, ATlsConnectionKeepsTheStartingRoom) {
  asio::io_context ioc{1};
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  auto conn = std::make_shared<UpstreamConn>(ioc.get_executor(), "https://127.0.0.1:1|", context);
  conn->note_body_piece(k_read_bytes - 100);
  EXPECT_EQ(conn->buffer().capacity(), k_read_bytes);
}

} // namespace
} // namespace keyshim::relay
