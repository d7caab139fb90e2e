// Bytes that must cross the proxy exactly as they were sent, in both
// directions: bodies of every media type, header names and values, the
// method and the raw target. The client side is a RawConnection, so the test
// writes every byte; the upstream side is what FakeUpstream recorded.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::test {
namespace {

bool iequal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Compares two byte strings without printing megabytes of binary on failure:
// the sizes and the first offset where they differ.
::testing::AssertionResult same_bytes(const std::string& expected, const std::string& actual) {
  if (expected == actual) {
    return ::testing::AssertionSuccess();
  }
  auto [e, a] = std::mismatch(expected.begin(), expected.end(), actual.begin(), actual.end());
  return ::testing::AssertionFailure() << "expected " << expected.size() << " bytes, got " << actual.size()
                                       << "; first difference at offset " << (e - expected.begin());
}

// The header fields of a response head as written: name exactly as sent,
// value without the surrounding whitespace, in order.
std::vector<std::pair<std::string, std::string>> fields_of(const std::string& head) {
  std::vector<std::pair<std::string, std::string>> fields;
  std::size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos + 2 <= head.size()) {
    pos += 2;
    std::size_t eol = head.find("\r\n", pos);
    std::string line = head.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol;
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    fields.emplace_back(line.substr(0, colon), value);
  }
  return fields;
}

// Every value of `name` (case-insensitive), in order.
std::vector<std::string> values_of(const std::vector<std::pair<std::string, std::string>>& fields,
                                   const std::string& name) {
  std::vector<std::string> values;
  for (const auto& [n, v] : fields) {
    if (iequal(n, name)) {
      values.push_back(v);
    }
  }
  return values;
}

// Whether a field with exactly this name (case-sensitive) and value is present.
bool has_field(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& name,
               const std::string& value) {
  return std::find(fields.begin(), fields.end(), std::make_pair(name, value)) != fields.end();
}

// Every byte value, NUL and the high half included, `rounds` times over.
std::string every_byte(int rounds) {
  std::string bytes;
  for (int round = 0; round < rounds; ++round) {
    for (int b = 0; b < 256; ++b) {
      bytes += static_cast<char>(b);
    }
  }
  return bytes;
}

// One request on a fresh connection; the parsed response.
RawResponse transparency_round_trip(const Shim& shim, const std::string& request) {
  RawConnection conn(shim.port());
  conn.send(request);
  conn.read_response(10s);
  return parse_response(conn.received());
}

// Reads until `done(everything received so far)` holds; false on close or
// after `timeout`. Unlike read_until, it does not depend on how keyshim
// frames the body: `done` can look at the de-chunked bytes.
template <class Done>
bool read_until_true(RawConnection& conn, Done done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(conn.received())) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !conn.read_more(left)) {
      return done(conn.received());
    }
  }
  return true;
}

// `plain` gzip-compressed as one stream, one piece per input piece: each piece
// but the last ends with a sync flush, so it decompresses on its own.
std::vector<std::string> gzip_pieces(const std::vector<std::string>& plain) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return {};
  }
  std::vector<std::string> pieces;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain[i].data()));
    z.avail_in = static_cast<uInt>(plain[i].size());
    int flush = i + 1 == plain.size() ? Z_FINISH : Z_SYNC_FLUSH;
    std::string piece;
    char out[16384];
    do {
      z.next_out = reinterpret_cast<Bytef*>(out);
      z.avail_out = sizeof out;
      deflate(&z, flush);
      piece.append(out, sizeof out - z.avail_out);
    } while (z.avail_out == 0);
    pieces.push_back(std::move(piece));
  }
  deflateEnd(&z);
  return pieces;
}

std::string transparency_gunzip(const std::string& compressed) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) {
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

std::string transparency_joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    out += p;
  }
  return out;
}

std::string post_head(const std::string& target, const std::string& content_type, std::size_t length,
                      const std::string& extra = "") {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(length) + "\r\n" + extra + "\r\n";
}

TEST(Transparency, MultipartBodyWithBinaryPartsArrivesByteIdentical) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  const std::string boundary = "----keyshimBoundary7MA4YWxkTrZu0gW";
  // An audio upload: every byte value, CRLFs, and a line that starts like the
  // boundary but is not one.
  std::string audio = every_byte(64) + "\r\n--" + boundary.substr(0, 12) + "\r\n" + every_byte(1);
  std::string body = "--" + boundary +
                     "\r\n"
                     "Content-Disposition: form-data; name=\"model\"\r\n\r\n"
                     "whisper-1\r\n"
                     "--" +
                     boundary +
                     "\r\n"
                     "Content-Disposition: form-data; name=\"file\"; filename=\"speech.wav\"\r\n"
                     "Content-Type: audio/wav\r\n\r\n" +
                     audio + "\r\n--" + boundary + "--\r\n";
  std::string content_type = "multipart/form-data; boundary=" + boundary;

  RawResponse res =
      transparency_round_trip(shim, post_head("/v1/audio/transcriptions", content_type, body.size()) + body);

  EXPECT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen()[0];
  EXPECT_EQ(seen.header("Content-Type"), content_type);
  EXPECT_TRUE(same_bytes(body, seen.body));
}

TEST(Transparency, FormUrlencodedBodyOfOneMebibyteArrivesIntact) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  std::string body;
  for (int i = 0; body.size() < 1024 * 1024 - 64; ++i) {
    body += "field" + std::to_string(i) + "=v%2B" + std::to_string(i) + "+%26%00&";
  }
  body += "pad=";
  body.resize(1024 * 1024, 'a');

  RawResponse res = transparency_round_trip(
      shim, post_head("/v1/files", "application/x-www-form-urlencoded", body.size()) + body);

  EXPECT_EQ(res.status, 200) << "1 MiB is far below max_request_body (64 MiB)";
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen()[0];
  EXPECT_EQ(seen.header("Content-Type"), "application/x-www-form-urlencoded");
  EXPECT_TRUE(same_bytes(body, seen.body));
}

TEST(Transparency, PercentSignsInHeaderValuesPassUndecodedBothWays) {
  FakeUpstream upstream;
  upstream.push(
      {200,
       {{"Content-Type", "application/json"}, {"Set-Cookie", "s=a%2Fb"}, {"X-Resp-Pct", "100%25 %zz %"}},
       {"{}"},
       false});
  Shim shim(pool_toml(1), upstream.base_url());

  RawResponse res = transparency_round_trip(
      shim,
      make_request("GET", "/v1/models", "", "X-Pct: a%41b%25\r\nX-Query-Like: q=%2F%3F&x=%E2%9C%93+1\r\n"));

  ASSERT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen()[0];
  EXPECT_EQ(seen.header("X-Pct"), "a%41b%25");
  EXPECT_EQ(seen.header("X-Query-Like"), "q=%2F%3F&x=%E2%9C%93+1");
  EXPECT_EQ(res.header("Set-Cookie"), "s=a%2Fb");
  EXPECT_EQ(res.header("X-Resp-Pct"), "100%25 %zz %");
}

TEST(Transparency, TwoSetCookieResponseHeadersBothReachTheClientInOrder) {
  FakeUpstream upstream;
  upstream.push({200,
                 {{"Content-Type", "application/json"},
                  {"Set-Cookie", "a=1; Path=/"},
                  {"X-Between", "x"},
                  {"Set-Cookie", "b=2; HttpOnly"}},
                 {"{}"},
                 false});
  Shim shim(pool_toml(1), upstream.base_url());

  RawResponse res = transparency_round_trip(shim, make_request("GET", "/v1/models"));

  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(values_of(fields_of(res.head), "Set-Cookie"),
            (std::vector<std::string>{"a=1; Path=/", "b=2; HttpOnly"}))
      << res.head;
}

TEST(Transparency, RequestHeaderNameCaseAndUtf8ValuesArriveUnchanged) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  const std::string utf8 = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80";

  RawResponse res =
      transparency_round_trip(shim, make_request("GET", "/v1/models", "",
                                                 "x-MiXeD-CaSe: Value With Spaces\r\n"
                                                 "X-Utf8: " +
                                                     utf8 + "\r\nanthropic-version: 2023-06-01\r\n"));

  ASSERT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  const auto fields = upstream.seen()[0].headers;
  EXPECT_TRUE(has_field(fields, "x-MiXeD-CaSe", "Value With Spaces"));
  EXPECT_TRUE(has_field(fields, "X-Utf8", utf8));
  EXPECT_TRUE(has_field(fields, "anthropic-version", "2023-06-01"));
}

TEST(Transparency, ResponseHeaderNameCaseAndUtf8ValuesReachTheClientUnchanged) {
  FakeUpstream upstream;
  const std::string utf8 = "r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93";
  upstream.push({200,
                 {{"Content-Type", "application/json"}, {"x-ReQuEsT-iD", "req_1"}, {"X-Utf8", utf8}},
                 {"{}"},
                 false});
  Shim shim(pool_toml(1), upstream.base_url());

  RawResponse res = transparency_round_trip(shim, make_request("GET", "/v1/models"));

  ASSERT_EQ(res.status, 200);
  auto fields = fields_of(res.head);
  EXPECT_TRUE(has_field(fields, "x-ReQuEsT-iD", "req_1")) << res.head;
  EXPECT_TRUE(has_field(fields, "X-Utf8", utf8)) << res.head;
}

TEST(Transparency, DuplicateRequestHeadersKeepTheirRelativeOrder) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());

  RawResponse res =
      transparency_round_trip(shim, make_request("GET", "/v1/models", "",
                                                 "X-Dup: first\r\nX-Other: o\r\nX-Dup: second\r\n"
                                                 "x-dup: third\r\nAccept: text/plain\r\nAccept: */*\r\n"));

  ASSERT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  const auto fields = upstream.seen()[0].headers;
  EXPECT_EQ(values_of(fields, "X-Dup"), (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(values_of(fields, "Accept"), (std::vector<std::string>{"text/plain", "*/*"}));
  EXPECT_EQ(values_of(fields, "X-Other"), (std::vector<std::string>{"o"}));
}

TEST(Transparency, ChunkedRequestBodyArrivesIntact) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  std::vector<std::string> chunks = {"{", every_byte(1).substr(0, 16), every_byte(16).substr(0, 4000),
                                     every_byte(256), "}"};
  std::string framed;
  for (const std::string& chunk : chunks) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
    framed += size + chunk + "\r\n";
  }
  framed += "0\r\n\r\n";

  RawResponse res = transparency_round_trip(
      shim, "POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" +
                framed);

  EXPECT_EQ(res.status, 200);
  ASSERT_EQ(upstream.request_count(), 1u);
  SeenRequest seen = upstream.seen()[0];
  // Re-framing (chunked, or a Content-Length) is keyshim's choice; the bytes
  // are not, and the upstream must never get both framings at once.
  EXPECT_TRUE(same_bytes(transparency_joined(chunks), seen.body));
  EXPECT_FALSE(seen.has_header("Content-Length") && seen.has_header("Transfer-Encoding"));
}

TEST(Transparency, GzipResponseBodyPassesCompressedAndUnchanged) {
  FakeUpstream upstream;
  std::vector<std::string> events = {"data: {\"n\":1}\n\n",
                                     "data: {\"n\":2,\"blob\":\"" + std::string(200000, 'q') + "\"}\n\n",
                                     "data: [DONE]\n\n"};
  std::vector<std::string> compressed = gzip_pieces(events);
  ASSERT_EQ(transparency_gunzip(transparency_joined(compressed)), transparency_joined(events))
      << "the test's own gzip stream";
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}};
  s.pieces = compressed;
  upstream.push(s);
  Shim shim(pool_toml(1), upstream.base_url());

  RawResponse res = transparency_round_trip(
      shim, make_request("POST", "/v1/chat/completions", R"({"stream":true})",
                         "Accept: text/event-stream\r\nAccept-Encoding: gzip, br, zstd\r\n"));

  EXPECT_EQ(res.status, 200);
  EXPECT_TRUE(res.complete);
  EXPECT_EQ(res.header("Content-Encoding"), "gzip");
  EXPECT_EQ(res.header("Content-Type"), "text/event-stream");
  EXPECT_TRUE(same_bytes(transparency_joined(compressed), res.body));
}

TEST(Transparency, GzipEventStreamIsRelayedAsItArrives) {
  FakeUpstream upstream;
  std::vector<std::string> compressed =
      gzip_pieces({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n", "data: [DONE]\n\n"});
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}};
  s.pieces = compressed;
  s.hold_after_first_piece = true; // the upstream waits until the test releases it
  upstream.push(s);
  // Timeouts far beyond the read below: only relaying the first compressed
  // piece as it arrives lets the client see it in time.
  Shim shim(pool_toml(1, "first_byte_timeout = \"60s\"\nidle_timeout = \"60s\"\n"), upstream.base_url());
  RawConnection conn(shim.port());
  conn.send(make_request("POST", "/v1/chat/completions", R"({"stream":true})",
                         "Accept: text/event-stream\r\nAccept-Encoding: gzip, br, zstd\r\n"));

  bool first_piece_arrived = read_until_true(
      conn, [&](const std::string& bytes) { return parse_response(bytes).body == compressed[0]; }, 10s);
  upstream.release();

  EXPECT_TRUE(first_piece_arrived) << "the first compressed event was held back";
  ASSERT_TRUE(conn.read_response(10s));
  EXPECT_TRUE(same_bytes(transparency_joined(compressed), parse_response(conn.received()).body));
}

TEST(Transparency, MethodAndRawTargetArriveUnchanged) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  const std::string target = "/v1/x?q=%41%2F&b=+";
  const std::vector<std::string> methods = {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
  for (const std::string& method : methods) {
    bool with_body = method == "POST" || method == "PUT" || method == "PATCH";
    EXPECT_EQ(transparency_round_trip(shim, make_request(method, target, with_body ? "{}" : "")).status, 200)
        << method;
  }
  auto seen = upstream.seen();
  ASSERT_EQ(seen.size(), methods.size());
  for (std::size_t i = 0; i < methods.size(); ++i) {
    EXPECT_EQ(seen[i].method, methods[i]);
    EXPECT_EQ(seen[i].target, target) << methods[i];
  }
}

TEST(Transparency, ClientKeyQueryParameterNeverReachesTheUpstream) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url()); // auth = bearer
  ASSERT_EQ(transparency_round_trip(shim, make_request("GET", "/v1/x?a=%41&key=placeholder&b=2")).status,
            200);
  ASSERT_EQ(transparency_round_trip(shim, make_request("GET", "/v1/x?key=placeholder")).status, 200);
  auto seen = upstream.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].target, "/v1/x?a=%41&b=2") << "the rest of the query stays as sent";
  EXPECT_EQ(seen[1].target, "/v1/x");
  for (const SeenRequest& r : seen) {
    EXPECT_EQ(r.target.find("placeholder"), std::string::npos) << r.target;
    EXPECT_EQ(r.header("Authorization"), "Bearer " + test_key(0));
  }
}

TEST(Transparency, ExpectContinueGetsAnInterimResponseBeforeTheFinalOne) {
  FakeUpstream upstream;
  Shim shim(pool_toml(1), upstream.base_url());
  std::string body = every_byte(256); // 64 KiB of binary
  RawConnection conn(shim.port());
  conn.send(post_head("/v1/files", "application/octet-stream", body.size(), "Expect: 100-continue\r\n"));

  // The client holds its body back until keyshim says to go on.
  ASSERT_TRUE(conn.read_until("\r\n\r\n", 10s)) << conn.received();
  EXPECT_EQ(conn.received().rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << conn.received();
  std::size_t interim_end = conn.received().find("\r\n\r\n") + 4;
  conn.send(body);
  ASSERT_TRUE(read_until_true(
      conn, [&](const std::string& bytes) { return parse_response(bytes.substr(interim_end)).complete; },
      10s))
      << conn.received();

  RawResponse final_response = parse_response(conn.received().substr(interim_end));
  EXPECT_EQ(final_response.status, 200);
  EXPECT_TRUE(final_response.complete);
  ASSERT_EQ(upstream.request_count(), 1u);
  EXPECT_TRUE(same_bytes(body, upstream.seen()[0].body));
}

} // namespace
} // namespace keyshim::test
