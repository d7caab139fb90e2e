// Streams: byte-for-byte, flushed as they arrive, and the commit point both
// ways: no failover after the first byte, and an abnormal end the client sees.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

namespace keyshim::test {
namespace {

Scripted sse(std::vector<std::string> pieces) {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  s.pieces = std::move(pieces);
  return s;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    out += p;
  }
  return out;
}

std::string stream_request() {
  return make_request("POST", "/v1/chat/completions", R"({"stream":true})", "Accept: text/event-stream\r\n");
}

TEST(Streaming, AwkwardSseFramingArrivesByteForByte) {
  std::vector<std::string> pieces = {": keep-alive comment\r\n\r\n",
                                     "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n",
                                     "data: line one\ndata: line two\n\n",
                                     "data: caf\xc3", // a UTF-8 character split across writes
                                     "\xa9 \xe2\x9c\x93\n\n",
                                     "data: " + std::string(1024 * 1024, 'z') + "\n\n", // a 1 MiB event
                                     "data: [DONE]\n\n"};
  FakeUpstream upstream;
  upstream.push(sse(pieces));
  Shim shim(pool_toml(1), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  ASSERT_TRUE(conn.read_response(20s));
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(res.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(res.body, joined(pieces));
}

TEST(Streaming, EachPieceIsFlushedBeforeTheNextArrives) {
  FakeUpstream upstream;
  Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n", "data: [DONE]\n\n"});
  s.hold_after_first_piece = true; // the upstream waits until the test releases it
  upstream.push(s);
  Shim shim(pool_toml(1), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  // The first event reaches the client while the upstream is still holding.
  ASSERT_TRUE(conn.read_until("data: {\"n\":1}\n\n", 10s));
  EXPECT_EQ(conn.received().find("\"n\":2"), std::string::npos);
  upstream.release();
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_EQ(parse_response(conn.received()).body, joined(s.pieces));
}

TEST(Streaming, UpstreamCutAfterCommitEndsTheResponseAbnormallyWithoutFailover) {
  LogCapture logs;
  FakeUpstream upstream;
  Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n", "data: {\"n\":3}\n\n"});
  s.cut_after_pieces = 2;
  upstream.push(s);
  Shim shim(pool_toml(2), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  ASSERT_TRUE(conn.read_to_close(10s));
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_FALSE(res.complete) << "a cut stream must not end with the final chunk";
  EXPECT_EQ(res.body, "data: {\"n\":1}\n\ndata: {\"n\":2}\n\n");
  EXPECT_EQ(conn.received().find("[DONE]"), std::string::npos);
  EXPECT_EQ(upstream.request_count(), 1u) << "no second key after the commit point";
  EXPECT_TRUE(logs.wait_for("error=")) << logs.text();
}

TEST(Streaming, IdleUpstreamAfterCommitEndsTheResponseAbnormally) {
  FakeUpstream upstream;
  Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"});
  s.piece_delay = std::chrono::seconds(8);
  upstream.push(s);
  Shim shim(pool_toml(1, "idle_timeout = \"300ms\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  ASSERT_TRUE(conn.read_to_close(10s));
  RawResponse res = parse_response(conn.received());
  EXPECT_FALSE(res.complete);
  EXPECT_EQ(res.body, "data: {\"n\":1}\n\n");
  EXPECT_TRUE(upstream.wait_for_hangups(1));
}

// Commit switches the deadline from first_byte_timeout to idle_timeout,
// which is usually earlier (defaults 10m and 5m): the timer must follow it.
// An event stream is probed first, anything else commits on its first bytes:
// both paths switch the deadline.
TEST(Streaming, StalledStreamIsCutAtTheIdleTimeoutEvenWhenTheFirstByteTimeoutIsLonger) {
  for (const char* type : {"text/event-stream", "application/x-ndjson"}) {
    FakeUpstream upstream;
    Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"});
    s.headers = {{"Content-Type", type}};
    s.piece_delay = std::chrono::seconds(30);
    upstream.push(s);
    Shim shim(
        pool_toml(1, "connect_timeout = \"60s\"\nfirst_byte_timeout = \"60s\"\nidle_timeout = \"300ms\"\n"),
        upstream.base_url());
    RawConnection conn(shim.port());
    conn.send(stream_request());
    ASSERT_TRUE(conn.read_to_close(10s)) << type << ": the stalled stream was not cut at idle_timeout";
    RawResponse res = parse_response(conn.received());
    EXPECT_FALSE(res.complete) << type;
    EXPECT_EQ(res.body, "data: {\"n\":1}\n\n") << type;
  }
}

TEST(Streaming, SilenceShorterThanIdleTimeoutIsTolerated) {
  FakeUpstream upstream;
  Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"});
  s.piece_delay = std::chrono::milliseconds(600);
  upstream.push(s);
  Shim shim(pool_toml(1, "idle_timeout = \"3s\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_TRUE(parse_response(conn.received()).complete);
}

// Pressing Ctrl-C in a CLI is routine: it is logged, but not as a warning,
// so `serve -q` stays quiet about it (nginx logs its 499 the same way).
TEST(Streaming, ClientLeavingMidStreamCancelsTheUpstreamAndIsLoggedAsInfo) {
  LogCapture log(util::LogLevel::info);
  FakeUpstream upstream;
  Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"});
  s.hold_after_first_piece = true;
  upstream.push(s);
  Shim shim(pool_toml(1), upstream.base_url());
  {
    RawConnection conn(shim.port());
    conn.send(stream_request());
    ASSERT_TRUE(conn.read_until("\"n\":1", 10s));
  } // the client hangs up
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(upstream.wait_for_hangups(1, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  ASSERT_TRUE(log.wait_for("client went away mid-stream")) << log.text();
  EXPECT_EQ(log.text().find("warn: POST"), std::string::npos) << log.text();
}

TEST(Streaming, ClientLeavingBeforeTheFirstByteCancelsTheUpstreamAndBlamesNoKey) {
  FakeUpstream upstream;
  Scripted thinking = sse({"data: late\n\n"});
  thinking.head_delay = std::chrono::seconds(8);
  upstream.push(thinking);
  Shim shim(pool_toml(2), upstream.base_url());
  {
    RawConnection conn(shim.port());
    conn.send(stream_request());
    ASSERT_TRUE(upstream.wait_for_requests(1));
  }
  ASSERT_TRUE(upstream.wait_for_hangups(1, 5s));
  EXPECT_EQ(upstream.request_count(), 1u) << "a client that left must not cause a failover";
  pool::KeyHealth h = shim.server().state()->pools.at(0).keys->health(0);
  EXPECT_EQ(h.state, pool::KeyState::available);
  EXPECT_EQ(h.error_count, 0u);
}

TEST(Streaming, KeepAliveCommentsWhileAModelThinksAreNotAFirstByteTimeout) {
  FakeUpstream upstream;
  std::vector<std::string> pieces(6, ": ping\n\n");
  pieces.push_back("data: {\"n\":1}\n\n");
  Scripted thinking = sse(pieces);
  thinking.piece_delay = std::chrono::milliseconds(150); // ~900 ms of comments in all
  upstream.push(thinking);
  Shim shim(pool_toml(2, "first_byte_timeout = \"400ms\"\nidle_timeout = \"3s\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(stream_request());
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_EQ(parse_response(conn.received()).body, joined(pieces));
  EXPECT_EQ(upstream.request_count(), 1u) << "a live stream must not fail over";
}

TEST(Streaming, SlowReaderGetsEveryByte) {
  FakeUpstream upstream;
  std::vector<std::string> pieces;
  for (int i = 0; i < 64; ++i) {
    pieces.push_back("data: " + std::string(64 * 1024, static_cast<char>('a' + i % 26)) + "\n\n");
  }
  upstream.push(sse(pieces));
  Shim shim(pool_toml(1), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  std::string got;
  httplib::Request req;
  auto res = client.Get("/v1/stream", [&](const char* data, std::size_t n) {
    got.append(data, n);
    if (got.size() < 512 * 1024) {
      std::this_thread::sleep_for(1ms); // a slow terminal, not synchronisation
    }
    return true;
  });
  ASSERT_TRUE(res);
  EXPECT_EQ(got.size(), joined(pieces).size());
  EXPECT_EQ(got, joined(pieces));
}

TEST(Streaming, SixtyFourConcurrentStreamsAllComplete) {
  FakeUpstream upstream;
  constexpr int k_streams = 64;
  for (int i = 0; i < k_streams; ++i) {
    Scripted s = sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n", "data: [DONE]\n\n"});
    s.piece_delay = std::chrono::milliseconds(200);
    upstream.push(s);
  }
  Shim shim(pool_toml(3, "strategy = \"round-robin\"\n"), upstream.base_url());
  std::atomic<int> complete{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < k_streams; ++i) {
    clients.emplace_back([&] {
      RawConnection conn(shim.port());
      conn.send(stream_request());
      if (conn.read_response(30s) && parse_response(conn.received()).complete) {
        ++complete;
      }
    });
  }
  for (auto& t : clients) {
    t.join();
  }
  EXPECT_EQ(complete.load(), k_streams);
  EXPECT_EQ(upstream.request_count(), static_cast<std::size_t>(k_streams));
}

} // namespace
} // namespace keyshim::test
