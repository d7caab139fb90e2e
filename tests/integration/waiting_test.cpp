// Waiting for a key (max_wait, max_concurrent) through the real server: a
// request that finds no key eligible waits, nothing sent, first come first
// served, and leaves the wait with a key, a 503 past max_wait, a hang-up or
// shutdown. "Nothing sent" is checked on the upstream, not inferred.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/log_capture.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

namespace keyshim::test {
namespace {

const std::string k_wait_secret = "sk-wait-test-0123456789abcdef";

// Pool "wait": one key that serves one request at a time (max_concurrent set
// on the key) and a 10 s max_wait. Pool "nowait": the same limit set on the
// pool, no max_wait. Pool "brief": the same limit, a 300 ms max_wait. All
// three at `url`.
std::string waiting_pools(const std::string& url) {
  return "[server]\n" +
         pool_section("wait", url, "max_wait = \"10s\"\n", {{"w1", k_wait_secret, "max_concurrent = 1\n"}}) +
         pool_section("nowait", url, "max_concurrent = 1\n", {{"n1", "sk-nowait-test-0123456789abcdef"}}) +
         pool_section("brief", url, "max_concurrent = 1\nmax_wait = \"300ms\"\n",
                      {{"b1", "sk-brief-test-0123456789abcdef"}});
}

// A stream the upstream holds after its first event, until release().
Scripted waiting_held_stream() {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = {"data: 1\n\n", "data: 2\n\n"};
  s.hold_after_first_piece = true;
  return s;
}

std::string waiting_post(const std::string& target) {
  return make_request("POST", target, "{}");
}

std::vector<std::string> targets_seen(const FakeUpstream& upstream) {
  std::vector<std::string> targets;
  for (const SeenRequest& r : upstream.seen()) {
    targets.push_back(r.target);
  }
  return targets;
}

pool::KeyHealth waiting_health(Shim& shim, const std::string& pool) {
  auto state = shim.server().state();
  for (const relay::ServedPool& served : state->pools) {
    if (served.config->name == pool) {
      return served.keys->health(0);
    }
  }
  ADD_FAILURE() << "no pool " << pool;
  return {};
}

// The debug line a request logs when it starts to wait: the signal that it
// is in the wait room, so the test needs no sleep to know it got there.
std::string wait_logged(const std::string& path) {
  return path + " waits up to";
}

// Send a request the upstream holds: true once its first event arrived, so
// it holds its key.
bool hold_the_key(RawConnection& conn, const std::string& target) {
  conn.send(waiting_post(target));
  return conn.read_until("data: 1");
}

TEST(Waiting, RequestsWaitInArrivalOrderForABusyKeyAndAreSentOnlyWhenTheSlotFrees) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/wait/v1/first")) << first.received();
  RawConnection second(shim.port());
  second.send(waiting_post("/wait/v1/second"));
  ASSERT_TRUE(logs.wait_for(wait_logged("POST /wait/v1/second")));
  RawConnection third(shim.port());
  third.send(waiting_post("/wait/v1/third"));
  ASSERT_TRUE(logs.wait_for(wait_logged("POST /wait/v1/third")));
  EXPECT_EQ(upstream.request_count(), 1u) << "a waiting request was sent";
  EXPECT_EQ(waiting_health(shim, "wait").in_flight, 1);

  upstream.release();
  for (RawConnection* conn : {&first, &second, &third}) {
    ASSERT_TRUE(conn->read_response());
    RawResponse res = parse_response(conn->received());
    EXPECT_EQ(res.status, 200);
    EXPECT_TRUE(res.complete);
  }
  EXPECT_EQ(targets_seen(upstream), (std::vector<std::string>{"/v1/first", "/v1/second", "/v1/third"}));
  for (const SeenRequest& r : upstream.seen()) {
    EXPECT_EQ(r.header("Authorization"), "Bearer " + k_wait_secret);
  }
}

TEST(Waiting, APoolWithoutMaxWaitAnswersABusyKey503AtOnce) {
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/nowait/v1/first")) << first.received();
  RawConnection second(shim.port());
  second.send(waiting_post("/nowait/v1/second"));
  ASSERT_TRUE(second.read_response());
  RawResponse res = parse_response(second.received());
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.header("Retry-After"), "1");
  EXPECT_NE(res.body.find("\"code\":\"no_key_available\""), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("max_concurrent"), std::string::npos) << res.body;
  // "At once": the answer came while the first request still holds the key.
  EXPECT_EQ(waiting_health(shim, "nowait").in_flight, 1);
  EXPECT_EQ(upstream.request_count(), 1u);
  upstream.release();
  ASSERT_TRUE(first.read_response());
  EXPECT_TRUE(parse_response(first.received()).complete);
}

TEST(Waiting, AWaitThatOutlastsMaxWaitIsAnswered503WithRetryAfter) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/brief/v1/first")) << first.received();
  RawConnection second(shim.port());
  second.send(waiting_post("/brief/v1/second"));
  ASSERT_TRUE(second.read_response());
  RawResponse res = parse_response(second.received());
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.header("Retry-After"), "1");
  EXPECT_NE(res.body.find("(waited "), std::string::npos) << res.body;
  EXPECT_TRUE(logs.contains(wait_logged("POST /brief/v1/second"))) << "it answered without waiting";
  EXPECT_EQ(upstream.request_count(), 1u);
  upstream.release();
  ASSERT_TRUE(first.read_response());
}

// Only the first waiter is asked when a wake finds no key; the one behind it
// still has its own max_wait, and gets its 503 then too.
TEST(Waiting, EveryWaiterInTheQueueIsAnswered503AtItsMaxWait) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/brief/v1/first")) << first.received();
  RawConnection second(shim.port());
  second.send(waiting_post("/brief/v1/second"));
  ASSERT_TRUE(logs.wait_for(wait_logged("POST /brief/v1/second")));
  RawConnection third(shim.port());
  third.send(waiting_post("/brief/v1/third"));
  for (RawConnection* conn : {&second, &third}) {
    ASSERT_TRUE(conn->read_response());
    RawResponse res = parse_response(conn->received());
    EXPECT_EQ(res.status, 503);
    EXPECT_NE(res.body.find("(waited "), std::string::npos) << res.body;
  }
  EXPECT_EQ(upstream.request_count(), 1u);
  upstream.release();
  ASSERT_TRUE(first.read_response());
}

// Waiting cannot help when the only key cools for longer than max_wait: the
// 503 comes at once, with the cooldown's end as its Retry-After.
TEST(Waiting, ACooldownLongerThanMaxWaitIsAnswered503AtOnceWithItsRetryAfter) {
  LogCapture logs;
  FakeUpstream upstream;
  Scripted limited;
  limited.status = 429;
  limited.headers = {{"Content-Type", "application/json"}, {"Retry-After", "3600"}};
  limited.pieces = {"{}"};
  limited.chunked = false;
  upstream.push(limited);
  Shim shim(pool_toml(1, "max_wait = \"300ms\"\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  ASSERT_EQ(client.Post("/v1/chat/completions", "{}", "application/json")->status, 429);
  auto res = client.Post("/v1/embeddings", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  ASSERT_TRUE(res->has_header("Retry-After"));
  int retry_after = std::stoi(res->get_header_value("Retry-After"));
  EXPECT_GT(retry_after, 3500);
  EXPECT_LE(retry_after, 3600);
  EXPECT_FALSE(logs.contains(wait_logged("POST /v1/embeddings")));
  EXPECT_EQ(upstream.request_count(), 1u);
}

TEST(Waiting, ACooldownShorterThanMaxWaitIsWaitedOutAndTheSameKeyServes) {
  LogCapture logs;
  FakeUpstream upstream;
  Scripted limited;
  limited.status = 429;
  limited.headers = {{"Content-Type", "application/json"}, {"Retry-After", "1"}};
  limited.pieces = {R"({"error":{"message":"slow down"}})"};
  limited.chunked = false;
  upstream.push(limited);
  Shim shim(pool_toml(1, "max_wait = \"5s\"\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(10, 0);
  auto res = client.Post("/v1/chat/completions", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"ok":true})");
  ASSERT_EQ(upstream.request_count(), 2u);
  for (const SeenRequest& r : upstream.seen()) {
    EXPECT_EQ(r.header("Authorization"), "Bearer " + test_key(0));
  }
  EXPECT_TRUE(
      logs.wait_for("POST /v1/chat/completions 200 pool=default key=k0 attempts=2 chain=k0:429,k0:200"))
      << logs.text();
}

// Found by bench/soak: a 429 for a named model cools the pair (key, model),
// not the key, and the wait used to leave that key excluded, so the request
// waited out the cooldown and then relayed the 429 without trying again.
TEST(Waiting, AModelCooldownShorterThanMaxWaitIsWaitedOutAndTheSameKeyServes) {
  LogCapture logs;
  FakeUpstream upstream;
  Scripted limited;
  limited.status = 429;
  limited.headers = {{"Content-Type", "application/json"}, {"Retry-After", "1"}};
  limited.pieces = {R"({"error":{"message":"slow down"}})"};
  limited.chunked = false;
  upstream.push(limited);
  Shim shim(pool_toml(1, "max_wait = \"5s\"\n"), upstream.base_url());
  httplib::Client client("127.0.0.1", shim.port());
  client.set_read_timeout(10, 0);
  auto res = client.Post("/v1/chat/completions", R"({"model":"gpt-x"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(upstream.request_count(), 2u);
  EXPECT_TRUE(logs.wait_for("model=gpt-x key=k0 attempts=2 chain=k0:429,k0:200")) << logs.text();
}

TEST(Waiting, AClientThatHangsUpWhileWaitingIsRemovedAndNeverSent) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/wait/v1/first")) << first.received();
  {
    RawConnection quitter(shim.port());
    quitter.send(waiting_post("/wait/v1/quitter"));
    ASSERT_TRUE(logs.wait_for(wait_logged("POST /wait/v1/quitter")));
    quitter.close();
  }
  // Its request line is written as soon as the hang-up is seen, while the
  // key is still busy: it left the wait then, not when the slot freed.
  ASSERT_TRUE(logs.wait_for("POST /wait/v1/quitter 499 pool=wait")) << logs.text();
  EXPECT_EQ(waiting_health(shim, "wait").in_flight, 1);

  upstream.release();
  ASSERT_TRUE(first.read_response());
  EXPECT_TRUE(parse_response(first.received()).complete);
  // The freed slot goes to the next request, not to the one that left.
  RawConnection next(shim.port());
  next.send(waiting_post("/wait/v1/next"));
  ASSERT_TRUE(next.read_response());
  EXPECT_EQ(parse_response(next.received()).status, 200);
  EXPECT_EQ(targets_seen(upstream), (std::vector<std::string>{"/v1/first", "/v1/next"}));
  // The key is released before the request line is written, which can be
  // just after the client has read its answer.
  ASSERT_TRUE(logs.wait_for("POST /wait/v1/next 200"));
  EXPECT_EQ(waiting_health(shim, "wait").in_flight, 0);
}

TEST(Waiting, ShutdownAnswersAWaitingRequest503AtOnce) {
  LogCapture logs;
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/wait/v1/first")) << first.received();
  RawConnection waiting(shim.port());
  waiting.send(waiting_post("/wait/v1/second"));
  ASSERT_TRUE(logs.wait_for(wait_logged("POST /wait/v1/second")));

  shim.server().begin_shutdown();
  ASSERT_TRUE(waiting.read_response());
  RawResponse res = parse_response(waiting.received());
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.header("Retry-After"), "1");
  EXPECT_NE(res.body.find("\"code\":\"shutting_down\""), std::string::npos) << res.body;
  // Well before max_wait (10 s): the first request still holds the key.
  EXPECT_EQ(waiting_health(shim, "wait").in_flight, 1);
  EXPECT_EQ(upstream.request_count(), 1u);

  // The request in flight drains normally.
  upstream.release();
  ASSERT_TRUE(first.read_response());
  RawResponse drained = parse_response(first.received());
  EXPECT_EQ(drained.status, 200);
  EXPECT_TRUE(drained.complete);
  EXPECT_EQ(upstream.request_count(), 1u);
}

// A request still arriving when shutdown begins (its body was on the way)
// would otherwise wait after the room was emptied, until max_wait, holding
// up the drain: nobody starts to wait once shutdown has begun.
TEST(Waiting, ARequestThatWouldWaitAfterShutdownBeganIsAnswered503AtOnce) {
  FakeUpstream upstream;
  upstream.push(waiting_held_stream());
  Shim shim(waiting_pools(upstream.base_url()), "");
  RawConnection first(shim.port());
  ASSERT_TRUE(hold_the_key(first, "/wait/v1/first")) << first.received();
  RawConnection idle(shim.port());
  RawConnection late(shim.port());
  late.send("POST /wait/v1/late HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(late.read_until("100 Continue\r\n\r\n")) << "the head was not read";

  shim.server().begin_shutdown();
  // The drain closes idle connections after emptying the wait room.
  ASSERT_TRUE(idle.read_to_close(5s)) << "the drain did not start";
  late.send("{}");
  ASSERT_TRUE(late.read_to_close(5s)) << "the late request is waiting";
  std::string received = late.received();
  RawResponse res = parse_response(received.substr(received.find("\r\n\r\n") + 4));
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.header("Retry-After"), "1");
  EXPECT_EQ(waiting_health(shim, "wait").in_flight, 1) << "the 503 came only when the key was free";
  EXPECT_EQ(upstream.request_count(), 1u);
  upstream.release();
  ASSERT_TRUE(first.read_response());
  EXPECT_TRUE(parse_response(first.received()).complete);
}

} // namespace
} // namespace keyshim::test
