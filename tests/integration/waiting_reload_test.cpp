// A reload reaches the requests waiting for a key, through the real server:
// they are served from the new pool file (a raised limit, a new key, a
// lowered limit, a removed pool), first come first served, and a request
// sent after the reload does not overtake them. Every step is observed (a
// log line, a first event, the upstream's count), never slept on.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>

namespace keyshim::test {
namespace {

const std::string k_first_secret = "sk-reload-first-0123456789abcdef";
const std::string k_second_secret = "sk-reload-second-0123456789abcdef";

// Pool "wait" (10 s max_wait) with one key and `key_extra` for it; pool
// "other" beside it when `with_other`. No default pool.
std::string wait_pool(const std::string& url, const std::string& label, const std::string& secret,
                      const std::string& key_extra, bool with_other = false) {
  std::string text =
      "[server]\n" + pool_section("wait", url, "max_wait = \"10s\"\n", {{label, secret, key_extra}});
  if (with_other) {
    text += pool_section("other", url, "", {{"o1", "sk-reload-other-0123456789abcdef"}});
  }
  return text;
}

// A stream the upstream holds after its first event, until release().
Scripted held_stream() {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = {"data: 1\n\n", "data: 2\n\n"};
  s.hold_after_first_piece = true;
  return s;
}

std::string post(const std::string& target) {
  return make_request("POST", target, "{}");
}

// True once the request's first event arrived: it holds a slot of its key.
bool hold_a_slot(RawConnection& conn, const std::string& target) {
  conn.send(post(target));
  return conn.read_until("data: 1");
}

// The debug line a request logs when it starts to wait.
std::string waits(const std::string& target) {
  return "POST " + target + " waits up to";
}

int in_flight(Shim& shim) {
  return shim.server().state()->pools.at(0).keys->health(0).in_flight;
}

// Issue 19 (2a): the waiters got 503 after max_wait while a request sent
// after the reload got a key at once.
TEST(WaitingAcrossReload, ARaisedLimitServesTheWaitersAtOnceAndANewcomerQueuesBehindThem) {
  LogCapture logs;
  FakeUpstream upstream;
  for (int i = 0; i < 3; ++i) {
    upstream.push(held_stream()); // the holder, then the two waiters once served
  }
  Shim shim(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 1\n"), "");
  RawConnection holder(shim.port());
  ASSERT_TRUE(hold_a_slot(holder, "/wait/v1/holder")) << holder.received();
  RawConnection first(shim.port());
  first.send(post("/wait/v1/first"));
  ASSERT_TRUE(logs.wait_for(waits("/wait/v1/first")));
  RawConnection second(shim.port());
  second.send(post("/wait/v1/second"));
  ASSERT_TRUE(logs.wait_for(waits("/wait/v1/second")));

  ASSERT_TRUE(shim.reload_with(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 3\n")));
  RawConnection newcomer(shim.port());
  newcomer.send(post("/wait/v1/newcomer"));
  // Both waiters are sent while the holder still holds its slot...
  ASSERT_TRUE(first.read_until("data: 1")) << first.received();
  ASSERT_TRUE(second.read_until("data: 1")) << second.received();
  // ...and the newcomer, behind them, finds the three slots taken.
  ASSERT_TRUE(logs.wait_for(waits("/wait/v1/newcomer"))) << logs.text();
  EXPECT_EQ(upstream.request_count(), 3u);
  EXPECT_EQ(in_flight(shim), 3);

  upstream.release();
  for (RawConnection* conn : {&holder, &first, &second, &newcomer}) {
    ASSERT_TRUE(conn->read_response());
    EXPECT_EQ(parse_response(conn->received()).status, 200);
  }
  ASSERT_EQ(upstream.request_count(), 4u);
  EXPECT_EQ(upstream.seen().back().target, "/v1/newcomer");
}

// Issue 19 (2b): k1, no longer in the file, served the waiting requests.
TEST(WaitingAcrossReload, AReplacedKeyNeverServesAWaiterAndTheNewKeyDoes) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(held_stream());
  Shim shim(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 1\n"), "");
  RawConnection holder(shim.port());
  ASSERT_TRUE(hold_a_slot(holder, "/wait/v1/holder")) << holder.received();
  std::vector<std::unique_ptr<RawConnection>> waiters;
  for (const char* name : {"/wait/v1/a", "/wait/v1/b", "/wait/v1/c"}) {
    waiters.push_back(std::make_unique<RawConnection>(shim.port()));
    waiters.back()->send(post(name));
    ASSERT_TRUE(logs.wait_for(waits(name)));
  }

  ASSERT_TRUE(
      shim.reload_with(wait_pool(upstream.base_url(), "k2", k_second_secret, "max_concurrent = 1\n")));
  // All three are served by k2, one after the other, while k1 is still held.
  for (auto& conn : waiters) {
    ASSERT_TRUE(conn->read_response()) << conn->received();
    EXPECT_EQ(parse_response(conn->received()).status, 200);
  }
  std::vector<SeenRequest> seen = upstream.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer " + k_first_secret);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].header("Authorization"), "Bearer " + k_second_secret) << seen[i].target;
    EXPECT_EQ(seen[i].target, std::string("/v1/") + static_cast<char>('a' + i - 1)); // in arrival order
  }
  upstream.release();
  ASSERT_TRUE(holder.read_response());
  EXPECT_EQ(upstream.request_count(), 4u);
}

// Issue 19 (2c): a waiter started while another request held the key, so 2
// were in flight under a limit of 1.
TEST(WaitingAcrossReload, ALoweredLimitHoldsTheWaitersUntilInFlightIsBelowIt) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(held_stream());
  upstream.push(held_stream());
  Shim shim(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 2\n"), "");
  RawConnection stays(shim.port());
  ASSERT_TRUE(hold_a_slot(stays, "/wait/v1/stays")) << stays.received();
  RawConnection leaves(shim.port());
  ASSERT_TRUE(hold_a_slot(leaves, "/wait/v1/leaves")) << leaves.received();
  RawConnection waiter(shim.port());
  waiter.send(post("/wait/v1/waiter"));
  ASSERT_TRUE(logs.wait_for(waits("/wait/v1/waiter")));

  ASSERT_TRUE(shim.reload_with(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 1\n")));
  leaves.close();
  // Its slot is given back (and the waiters asked) before its request line
  // is written: by then the waiter would have started.
  ASSERT_TRUE(logs.wait_for("POST /wait/v1/leaves ")) << logs.text();
  EXPECT_EQ(in_flight(shim), 1);
  EXPECT_EQ(upstream.request_count(), 2u) << "the waiter was sent with the key at its new limit";

  upstream.release();
  ASSERT_TRUE(stays.read_response());
  ASSERT_TRUE(waiter.read_response()) << waiter.received();
  EXPECT_EQ(parse_response(waiter.received()).status, 200);
  EXPECT_EQ(upstream.request_count(), 3u);
}

// A waiter whose pool the reload removed is answered as a request to a pool
// that does not exist is: 404 naming the pools there are, nothing sent.
TEST(WaitingAcrossReload, AWaiterWhosePoolWasRemovedIsAnswered404) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(held_stream());
  Shim shim(wait_pool(upstream.base_url(), "k1", k_first_secret, "max_concurrent = 1\n", true), "");
  RawConnection holder(shim.port());
  ASSERT_TRUE(hold_a_slot(holder, "/wait/v1/holder")) << holder.received();
  RawConnection waiter(shim.port());
  waiter.send(post("/wait/v1/waiter"));
  ASSERT_TRUE(logs.wait_for(waits("/wait/v1/waiter")));

  ASSERT_TRUE(shim.reload_with("[server]\n" + pool_section("other", upstream.base_url(), "",
                                                           {{"o1", "sk-reload-other-0123456789abcdef"}})));
  ASSERT_TRUE(waiter.read_response()) << waiter.received();
  RawResponse res = parse_response(waiter.received());
  EXPECT_EQ(res.status, 404);
  EXPECT_NE(res.body.find("\"code\":\"unknown_pool\""), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("/other/"), std::string::npos) << res.body;
  EXPECT_EQ(upstream.request_count(), 1u);
  upstream.release();
  ASSERT_TRUE(holder.read_response());
}

} // namespace
} // namespace keyshim::test
