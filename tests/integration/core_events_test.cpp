// Events on the proxy core's state, through the real server: connection
// deadlines (head, keep-alive, body), a compressed event stream relayed as it
// arrives and probed for an error event, an encoding that cannot be probed, an
// oversized upstream head, and a SIGTERM that must not wait for a slow reload.
// Every wait is bounded; nothing sleeps to synchronise.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <signal.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace keyshim::test {
namespace {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// keyshim's server with connection limits of the test's choosing (Shim uses
// the defaults, 30 s each) and a one-key pool pointing at `upstream_url`.
class LimitedShim {
public:
  LimitedShim(const server::ConnectionLimits& limits, const std::string& upstream_url) {
    std::string pool = pool_toml(1);
    const std::string marker = "@UPSTREAM@";
    pool.replace(pool.find(marker), marker.size(), upstream_url);
    server::ServeOptions options;
    options.config_path = m_dir.write("keys.toml", pool, 0600);
    options.listen = config::ListenAddress{"127.0.0.1", 0};
    options.limits = limits;
    m_server = std::make_unique<server::ShimServer>(options);
    m_server->load();
    std::string error;
    if (!m_server->bind(error)) {
      throw std::runtime_error(error);
    }
    m_thread = std::thread([this] { m_server->serve(); });
  }
  ~LimitedShim() {
    m_server->begin_shutdown();
    m_server->abort_in_flight();
    m_thread.join();
  }
  LimitedShim(const LimitedShim&) = delete;
  LimitedShim& operator=(const LimitedShim&) = delete;

  int port() const { return m_server->port(); }

private:
  TempDir m_dir;
  std::unique_ptr<server::ShimServer> m_server;
  std::thread m_thread;
};

// Limits where only the deadline under test is short: whichever event the
// test sees can then only have come from that deadline.
server::ConnectionLimits only_short(milliseconds server::ConnectionLimits::*which) {
  server::ConnectionLimits limits;
  limits.head_timeout = milliseconds(20'000);
  limits.keep_alive = milliseconds(20'000);
  limits.body_timeout = milliseconds(20'000);
  limits.*which = milliseconds(300);
  return limits;
}

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

milliseconds since(steady::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady::now() - start);
}

// One gzip stream written piece by piece, as an upstream compresses an event
// stream: Z_SYNC_FLUSH makes a piece decompressible on its own, Z_FINISH ends
// the stream.
class GzipStream {
public:
  GzipStream() {
    if (deflateInit2(&m_z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      throw std::runtime_error("zlib: deflateInit2 failed");
    }
  }
  ~GzipStream() { deflateEnd(&m_z); }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  std::string write(const std::string& plain, int flush) {
    m_z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
    m_z.avail_in = static_cast<uInt>(plain.size());
    std::string out;
    char buffer[16384];
    do {
      m_z.next_out = reinterpret_cast<Bytef*>(buffer);
      m_z.avail_out = sizeof buffer;
      deflate(&m_z, flush);
      out.append(buffer, sizeof buffer - m_z.avail_out);
    } while (m_z.avail_out == 0);
    return out;
  }

private:
  z_stream m_z{};
};

std::string gunzip(const std::string& compressed) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    return {};
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string plain;
  char out[16384];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = sizeof out;
    rc = inflate(&z, Z_NO_FLUSH);
    plain.append(out, sizeof out - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  return plain;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) {
    out += piece;
  }
  return out;
}

std::string stream_request() {
  return make_request("POST", "/v1/chat/completions", R"({"stream":true})",
                      "Accept: text/event-stream\r\nAccept-Encoding: gzip, br, zstd\r\n");
}

// Reads until the de-chunked body received so far is exactly `expected`;
// false on close or after `timeout`.
bool read_until_body(RawConnection& conn, const std::string& expected, milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  while (parse_response(conn.received()).body != expected) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now());
    if (left.count() <= 0 || !conn.read_more(left)) {
      return parse_response(conn.received()).body == expected;
    }
  }
  return true;
}

// The key each request carried to the upstream (auth = bearer).
std::vector<std::string> keys_seen(const FakeUpstream& upstream) {
  std::vector<std::string> keys;
  for (const SeenRequest& r : upstream.seen()) {
    keys.push_back(r.header("Authorization").substr(7));
  }
  return keys;
}

// ---- connection deadlines

TEST(CoreEvents, PartialHeadGets408AfterTheHeadTimeoutAndIsClosed) {
  FakeUpstream upstream;
  LimitedShim shim(only_short(&server::ConnectionLimits::head_timeout), upstream.base_url());
  auto started = steady::now();
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));

  ASSERT_TRUE(conn.read_to_close(5s)) << "not closed: " << conn.received();
  EXPECT_GE(since(started), 300ms) << "answered before the head timeout";
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 408) << conn.received();
  EXPECT_EQ(res.header("Connection"), "close");
  EXPECT_EQ(count_of(conn.received(), "HTTP/1.1 "), 1u) << conn.received();
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(upstream.request_count(), 0u);
  EXPECT_EQ(upstream.connections(), 0u);
}

TEST(CoreEvents, SilentConnectionGets408AfterTheHeadTimeoutAndIsClosed) {
  FakeUpstream upstream;
  LimitedShim shim(only_short(&server::ConnectionLimits::head_timeout), upstream.base_url());
  auto started = steady::now();
  RawConnection conn(shim.port());

  ASSERT_TRUE(conn.read_to_close(5s)) << "not closed: " << conn.received();
  EXPECT_GE(since(started), 300ms);
  EXPECT_EQ(parse_response(conn.received()).status, 408) << conn.received();
  EXPECT_EQ(count_of(conn.received(), "HTTP/1.1 "), 1u) << conn.received();
  EXPECT_EQ(upstream.connections(), 0u);
}

TEST(CoreEvents, IdleKeepAliveConnectionIsClosedQuietlyAfterTheKeepAliveTime) {
  FakeUpstream upstream;
  LimitedShim shim(only_short(&server::ConnectionLimits::keep_alive), upstream.base_url());
  auto started = steady::now();
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send(make_request("GET", "/v1/models")));
  ASSERT_TRUE(conn.read_response(5s)) << conn.received();
  ASSERT_EQ(parse_response(conn.received()).status, 200);
  std::size_t first_response = conn.received().size();

  ASSERT_TRUE(conn.read_to_close(5s)) << "an idle keep-alive connection was not closed";
  // The keep-alive time starts after the response was written, so after the
  // request was sent.
  EXPECT_GE(since(started), 300ms);
  EXPECT_EQ(conn.received().size(), first_response)
      << "bytes after the first response: " << conn.received().substr(first_response);
  EXPECT_EQ(upstream.request_count(), 1u);
}

TEST(CoreEvents, StalledRequestBodyGets408AfterTheBodyTimeoutAndNothingIsForwarded) {
  FakeUpstream upstream;
  LimitedShim shim(only_short(&server::ConnectionLimits::body_timeout), upstream.base_url());
  RawConnection conn(shim.port());
  auto started = steady::now();
  ASSERT_TRUE(conn.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                        "{\"model\":\""));

  // The head timeout is 20 s: only the body deadline can answer within 5 s.
  ASSERT_TRUE(conn.read_to_close(5s)) << "the stalled body was not cut off by body_timeout (300 ms) after "
                                      << since(started).count() << " ms: " << conn.received();
  EXPECT_GE(since(started), 300ms);
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 408) << conn.received();
  EXPECT_EQ(count_of(conn.received(), "HTTP/1.1 "), 1u) << conn.received();
  EXPECT_EQ(upstream.request_count(), 0u);
  EXPECT_EQ(upstream.connections(), 0u) << "a request without its body reached the upstream";
}

// ---- compressed and unprobed streams

TEST(CoreEvents, GzipEventStreamReachesTheClientWhileTheUpstreamHoldsAndArrivesByteIdentical) {
  GzipStream gzip;
  std::vector<std::string> compressed = {gzip.write("data: {\"n\":1}\n\n", Z_SYNC_FLUSH),
                                         gzip.write("data: {\"n\":2}\n\ndata: [DONE]\n\n", Z_FINISH)};
  ASSERT_EQ(gunzip(joined(compressed)), "data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n");
  FakeUpstream upstream;
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}};
  s.pieces = compressed;
  s.hold_after_first_piece = true;
  upstream.push(s);
  // Timeouts far beyond the reads below: only relaying the first piece as it
  // arrives lets the client see it while the upstream holds.
  Shim shim(pool_toml(1, "first_byte_timeout = \"60s\"\nidle_timeout = \"60s\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send(stream_request()));

  bool first_piece_arrived = read_until_body(conn, compressed[0], 5s);
  EXPECT_TRUE(first_piece_arrived) << "the first compressed event was held back; got "
                                   << parse_response(conn.received()).body.size() << " body bytes";
  upstream.release();

  ASSERT_TRUE(conn.read_response(10s));
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(res.header("Content-Encoding"), "gzip");
  EXPECT_TRUE(res.body == joined(compressed))
      << "the body differs: " << res.body.size() << " bytes, sent " << joined(compressed).size();
}

TEST(CoreEvents, GzipEventStreamOpeningWithAnErrorEventFailsOverUnseen) {
  GzipStream bad_gzip;
  std::string overloaded = bad_gzip.write(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n", Z_FINISH);
  GzipStream good_gzip;
  std::vector<std::string> good = {
      good_gzip.write("event: message_start\ndata: {\"type\":\"message_start\"}\n\n", Z_SYNC_FLUSH),
      good_gzip.write("data: [DONE]\n\n", Z_FINISH)};
  FakeUpstream upstream;
  Scripted first;
  first.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}};
  first.pieces = {overloaded};
  upstream.push(first);
  Scripted second = first;
  second.pieces = good;
  upstream.push(second);
  Shim shim(pool_toml(2), upstream.base_url());
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send(stream_request()));

  ASSERT_TRUE(conn.read_response(10s)) << conn.received();
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_TRUE(res.complete);
  EXPECT_TRUE(res.body == joined(good)) << "the client did not get exactly key 1's stream";
  EXPECT_EQ(conn.received().find(overloaded), std::string::npos) << "key 0's bytes reached the client";
  EXPECT_EQ(gunzip(res.body).find("overloaded_error"), std::string::npos);
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(1)}));
}

TEST(CoreEvents, StreamWithAnUnknownContentEncodingIsRelayedUnprobed) {
  // Bytes no probe could read, without an event end: a stream held for a
  // probe would not reach the client while the upstream holds.
  std::vector<std::string> pieces = {std::string("\x1f\x9d\x90") + "LZW-bytes\x01\x02",
                                     std::string("\x03\x04") + "the rest"};
  FakeUpstream upstream;
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "compress"}};
  s.pieces = pieces;
  s.hold_after_first_piece = true;
  upstream.push(s);
  Shim shim(pool_toml(1, "first_byte_timeout = \"60s\"\nidle_timeout = \"60s\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send(stream_request()));

  bool first_piece_arrived = read_until_body(conn, pieces[0], 5s);
  EXPECT_TRUE(first_piece_arrived) << "the compress-encoded stream was held back";
  upstream.release();

  ASSERT_TRUE(conn.read_response(10s));
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.header("Content-Encoding"), "compress");
  EXPECT_TRUE(res.body == joined(pieces));
}

// ---- the upstream response head

TEST(CoreEvents, UpstreamHeadOver64KiBIsAFailedAttemptAndTheNextKeyServes) {
  const std::string huge(70 * 1024, 'h');
  Scripted oversized;
  oversized.headers = {{"Content-Type", "application/json"}, {"X-Huge", huge}};
  oversized.pieces = {R"({"from":"oversized"})"};
  oversized.chunked = false;
  Scripted ok;
  ok.headers = {{"Content-Type", "application/json"}};
  ok.pieces = {R"({"from":"key 1"})"};
  ok.chunked = false;
  FakeUpstream upstream;
  // A failed attempt that got no response is tried once more on the same key
  // (as a reset would be), then the next key serves.
  upstream.push(oversized);
  upstream.push(oversized);
  upstream.push(ok);
  Shim shim(pool_toml(2), upstream.base_url());
  RawConnection conn(shim.port());
  ASSERT_TRUE(conn.send(make_request("POST", "/v1/chat/completions", "{}")));

  ASSERT_TRUE(conn.read_response(10s)) << conn.received().substr(0, 300);
  RawResponse res = parse_response(conn.received());
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, R"({"from":"key 1"})");
  EXPECT_EQ(conn.received().find("hhhhhhhh"), std::string::npos) << "the huge header reached the client";
  EXPECT_EQ(res.header("X-Huge"), "");
  EXPECT_EQ(keys_seen(upstream), (std::vector<std::string>{test_key(0), test_key(0), test_key(1)}));
}

// Client hang-up before the commit point closing the upstream at once is
// covered by Streaming.ClientLeavingBeforeTheFirstByteCancelsTheUpstreamAndBlamesNoKey.

// ---- signals through the real binary

TEST(CoreEvents, SigtermDuringASlowKeyCmdReloadStartsTheDrainAtOnce) {
  FakeUpstream upstream;
  TempDir dir;
  const std::string marker = dir.path() + "/slow-reload";
  std::string pool = "[upstream]\nbase_url = \"" + upstream.base_url() +
                     "\"\n[[keys]]\nlabel = \"slow\"\n"
                     "key_cmd = [\"sh\", \"-c\", \"if [ -e '" +
                     marker + "' ]; then sleep 6; fi; echo sk-slow-key-0001\"]\n";
  std::string path = dir.write("keys.toml", pool, 0600);
  int port = unused_loopback_port();
  RunOptions options;
  options.timeout = std::chrono::seconds(60);
  ChildProcess serve = ChildProcess::start(
      {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
  ASSERT_TRUE(serve.wait_for_stderr("listening on")) << serve.err();

  dir.write("slow-reload", "", 0600); // from now on the key_cmd takes 6 s
  serve.send_signal(SIGHUP);
  ASSERT_TRUE(serve.wait_for_stderr("SIGHUP: reloading", 5s)) << serve.err();
  serve.send_signal(SIGTERM);
  auto terminated = steady::now();

  EXPECT_TRUE(serve.wait_for_stderr("shutting down", 2s))
      << "SIGTERM waited for the reload; after " << since(terminated).count() << " ms:\n"
      << serve.err();
  EXPECT_EQ(serve.err().find("reloaded"), std::string::npos) << serve.err();

  RunResult result = serve.wait();
  EXPECT_FALSE(result.timed_out);
  EXPECT_LT(since(terminated), 15s) << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::size_t shutting_down = result.err.find("shutting down");
  std::size_t reloaded = result.err.find("reloaded");
  EXPECT_NE(shutting_down, std::string::npos) << result.err;
  if (reloaded != std::string::npos) {
    EXPECT_LT(shutting_down, reloaded) << result.err;
  }
}

} // namespace
} // namespace keyshim::test
