// How an HTTPS upstream's stream ends, through the real server: a body that
// ends with the connection is whole only after close_notify, and one cut
// without it reaches the client as a broken response, never as a complete
// one; a pooled TLS connection the upstream closed while idle is retried on
// a fresh one, free, as a plain one is (docs/behaviour.md §9).
#include "support/http_raw_client.hpp"
#include "support/http_raw_tls_upstream.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

namespace keyshim::test {
namespace {

const std::string k_close_delimited_head = "HTTP/1.1 200 OK\r\n"
                                           "Content-Type: text/plain\r\n"
                                           "Connection: close\r\n\r\n";

std::string tls_stream_pool(const RawTlsUpstream& upstream, int keys = 1) {
  return pool_toml(keys, "ca_file = '" + upstream.ca_file() + "'\n");
}

// The response keyshim relays for one request to a stream that ends at the
// end of the connection, in two records, then with or without close_notify.
RawResponse tls_stream_relayed(bool close_notify) {
  RawTlsUpstream upstream([close_notify](RawTlsConnection& connection, int) {
    if (connection.read_request().empty()) {
      return;
    }
    connection.write(k_close_delimited_head);
    connection.write("first record,");
    connection.write(" second record");
    if (close_notify) {
      connection.close_notify();
    }
  });
  Shim shim(tls_stream_pool(upstream), upstream.base_url());
  RawConnection client(shim.port());
  EXPECT_TRUE(client.send(make_request("POST", "/v1/chat/completions", R"({"model":"m"})")));
  client.read_response(); // whole, or cut by keyshim's close: parsed below either way
  return parse_response(client.received());
}

TEST(TlsStream, ABodyThatEndsWithCloseNotifyArrivesWholeAndComplete) {
  RawResponse response = tls_stream_relayed(true);
  EXPECT_EQ(response.status, 200) << response.head;
  EXPECT_EQ(response.body, "first record, second record");
  EXPECT_TRUE(response.complete) << response.head;
}

TEST(TlsStream, ABodyCutWithoutCloseNotifyReachesTheClientBroken) {
  // A truncation attack, or an upstream that died: the bytes that came are
  // relayed, and the client is not told the body is whole.
  RawResponse response = tls_stream_relayed(false);
  EXPECT_EQ(response.status, 200) << response.head;
  EXPECT_EQ(response.body, "first record, second record");
  EXPECT_FALSE(response.complete) << response.head;
}

// The first connection answers once, keeps alive, and is closed by the
// upstream (with or without close_notify) as soon as the answer is out.
void expect_idle_close_retried_free(bool close_notify) {
  LogCapture logs;
  RawTlsUpstream upstream([close_notify](RawTlsConnection& connection, int n) {
    if (connection.read_request().empty()) {
      return;
    }
    std::string body = n == 0 ? "first" : "second";
    connection.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    if (close_notify && n == 0) {
      connection.close_notify();
    }
  });
  Shim shim(tls_stream_pool(upstream, 2), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(20, 0);
  httplib::Result first = client.Post("/v1/first", R"({"model":"m"})", "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body, "first");
  httplib::Result second = client.Post("/v1/chat/completions", R"({"model":"m"})", "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200) << second->body;
  EXPECT_EQ(second->body, "second");
  EXPECT_EQ(upstream.connections(), 2);
  EXPECT_TRUE(logs.contains("key k0: pooled connection was closed")) << logs.text();
  EXPECT_TRUE(logs.wait_for("/v1/chat/completions 200 pool=default model=m key=k0 attempts=1 chain=k0:200 "))
      << logs.text();
}

TEST(TlsStream, APooledConnectionClosedWithCloseNotifyIsRetriedFreeOnAFreshOne) {
  expect_idle_close_retried_free(true);
}

TEST(TlsStream, APooledConnectionClosedWithoutCloseNotifyIsRetriedFreeOnAFreshOne) {
  expect_idle_close_retried_free(false);
}

} // namespace
} // namespace keyshim::test
