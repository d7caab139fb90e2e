// The fault matrix under signals, through the built binary: for each fault,
// a reload (SIGHUP) and a shutdown (SIGTERM) arrive while the fault is under
// way (the upstream holds before its head or after the first event, or the
// client is mid-upload), then the fault plays out. The client must get what
// it would have got without the signal: a complete answer, or an abnormal
// end, never a short answer; SIGTERM must still exit 0 once it drained.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <signal.h>

namespace keyshim::test {
namespace {

enum class Moment {
  before_head,  // the upstream has the request and holds its answer
  stalled_head, // the upstream is silent past first_byte_timeout
  mid_stream,   // the client has the first event; the upstream holds
  uploading,    // the client sent half its body
};

enum class Then {
  release, // the held fault plays out (upstream.release(), or the upload finishes)
  hang_up, // the client leaves
  silence, // nothing more happens: keyshim's idle_timeout must end it
};

enum class Expect { complete, cut, left };

struct Condition {
  const char* name;
  Moment moment;
  Then then;
  Expect expect;
  std::string pool_extra; // [upstream] settings
  std::vector<Scripted> scripts;
};

const char* k_good_body = "data: ok\n\n";

Scripted signals_sse(std::vector<std::string> pieces) {
  Scripted s;
  s.headers = {{"Content-Type", "text/event-stream"}};
  s.pieces = std::move(pieces);
  return s;
}

Scripted held_head(Scripted s) {
  s.hold_before_head = true;
  return s;
}

Scripted error_status(int status) {
  Scripted s;
  s.status = status;
  s.headers = {{"Content-Type", "application/json"}, {"Retry-After", "30"}};
  s.pieces = {R"({"error":{"message":"no"}})"};
  s.chunked = false;
  return s;
}

Scripted held_after_first(Scripted s) {
  s.hold_after_first_piece = true;
  return s;
}

// Scripts for "held mid-stream, then cut this way".
Scripted cut_mid(bool reset, std::string raw, bool chunked) {
  Scripted s = held_after_first(signals_sse({"data: 1\n\n", "data: 2\n\n"}));
  s.cut_after_pieces = 1;
  s.reset_at_cut = reset;
  s.raw_at_cut = std::move(raw);
  s.chunked = chunked;
  return s;
}

std::vector<Condition> conditions() {
  Scripted good = signals_sse({k_good_body});
  Scripted reset = held_head(signals_sse({"x"}));
  reset.reset_before_reply = true;
  Scripted silent = signals_sse({"data: late\n\n"});
  silent.head_delay = std::chrono::seconds(8);
  Scripted endless = held_head(signals_sse({"data: never\n\n"}));
  endless.headers.emplace_back("X-Endless", std::string(70 * 1024, 'h'));
  Scripted stream = held_after_first(signals_sse({"data: 1\n\n", "data: 2\n\n"}));
  return {
      {"UpstreamResetBeforeTheHead", Moment::before_head, Then::release, Expect::complete, "", {reset, good}},
      {"UpstreamSilentPastFirstByteTimeout",
       Moment::stalled_head,
       Then::release,
       Expect::complete,
       "first_byte_timeout = \"1s\"\n",
       {silent, good}},
      {"UpstreamEndlessHead", Moment::before_head, Then::release, Expect::complete, "", {endless, good}},
      {"UpstreamErrorEventFirst",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(signals_sse({"data: {\"error\":{\"type\":\"overloaded_error\"}}\n\n"})), good}},
      {"Upstream429",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(error_status(429)), good}},
      {"Upstream401",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(error_status(401)), good}},
      {"Upstream402",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(error_status(402)), good}},
      {"Upstream403",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(error_status(403)), good}},
      {"Upstream5xx",
       Moment::before_head,
       Then::release,
       Expect::complete,
       "",
       {held_head(error_status(500)), error_status(503), good}},
      {"StreamCompletes", Moment::mid_stream, Then::release, Expect::complete, "", {stream}},
      {"UpstreamResetMidStream",
       Moment::mid_stream,
       Then::release,
       Expect::cut,
       "",
       {cut_mid(true, "", true)}},
      {"UpstreamShortBody", Moment::mid_stream, Then::release, Expect::cut, "", {cut_mid(false, "", false)}},
      {"UpstreamBrokenChunk",
       Moment::mid_stream,
       Then::release,
       Expect::cut,
       "",
       {cut_mid(false, "zz\r\nbad\r\n", true)}},
      {"UpstreamStalledMidStream",
       Moment::mid_stream,
       Then::silence,
       Expect::cut,
       "idle_timeout = \"1s\"\n",
       {stream}},
      {"ClientLeavesWhileWaiting", Moment::before_head, Then::hang_up, Expect::left, "", {held_head(good)}},
      {"ClientLeavesMidStream", Moment::mid_stream, Then::hang_up, Expect::left, "", {stream}},
      {"ClientFinishesItsUpload", Moment::uploading, Then::release, Expect::complete, "", {good}},
      {"ClientLeavesWhileUploading", Moment::uploading, Then::hang_up, Expect::left, "", {good}},
  };
}

const std::string k_signals_body = R"({"model":"m","stream":true,"messages":[]})";

// `expect`: ask for 100 Continue, whose arrival shows that keyshim has read
// the head and is reading the body (the upload is under way, not queued).
std::string request_head(bool expect = false) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         std::string(expect ? "Expect: 100-continue\r\n" : "") +
         "Content-Length: " + std::to_string(k_signals_body.size()) + "\r\n\r\n";
}

// The final answer, after any 100 Continue: complete, or cut by a close
// (never left hanging).
RawResponse read_answer(RawConnection& conn) {
  auto start = [&] {
    const std::string& got = conn.received();
    return got.rfind("HTTP/1.1 100 ", 0) == 0 ? got.find("\r\n\r\n") + 4 : std::size_t{0};
  };
  for (int i = 0; i < 1000 && !parse_response(conn.received().substr(start())).complete; ++i) {
    if (!conn.read_more(20s)) {
      break; // closed, or silent for 20 s
    }
  }
  RawResponse res = parse_response(conn.received().substr(start()));
  if (!res.complete) {
    EXPECT_TRUE(conn.read_to_close(1s)) << "an incomplete answer must end with a close";
  }
  return res;
}

class FaultSignals : public ::testing::TestWithParam<std::tuple<int, int>> {
protected:
  ChildProcess start(const Condition& c) {
    std::string text = pool_toml(2, c.pool_extra);
    const std::string marker = "@UPSTREAM@";
    text.replace(text.find(marker), marker.size(), upstream.base_url());
    std::string path = dir.write("keys.toml", text, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    ChildProcess child = ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
    EXPECT_TRUE(child.wait_for_stderr("listening on")) << child.err();
    return child;
  }

  // Sends the request and waits until the condition's moment has come.
  bool reach(const Condition& c, RawConnection& conn) {
    if (c.moment == Moment::uploading) {
      return conn.send(request_head(true)) && conn.read_until("100 Continue\r\n\r\n") &&
             conn.send(k_signals_body.substr(0, k_signals_body.size() / 2));
    }
    conn.send(request_head() + k_signals_body);
    if (c.moment == Moment::mid_stream) {
      return conn.read_until("data: 1\n\n");
    }
    return upstream.wait_for_requests(1);
  }

  // After the signal: let the fault play out, or leave.
  void play_out(const Condition& c, RawConnection& conn) {
    if (c.then == Then::silence) {
      return;
    }
    if (c.then == Then::hang_up) {
      conn.close();
      return;
    }
    if (c.moment == Moment::uploading) {
      conn.send(k_signals_body.substr(k_signals_body.size() / 2));
    }
    upstream.release();
  }

  void check(const Condition& c, RawConnection& conn, ChildProcess& serve) {
    if (c.expect == Expect::left) {
      if (c.moment == Moment::uploading) {
        EXPECT_TRUE(serve.wait_for_stderr("while sending its request body") ||
                    serve.err().find("shutting down") != std::string::npos)
            << serve.err();
        EXPECT_EQ(upstream.request_count(), 0u) << "a half-uploaded request must never be sent";
      } else {
        EXPECT_TRUE(upstream.wait_for_hangups(1)) << "the upstream request was not cancelled";
      }
      return;
    }
    RawResponse res = read_answer(conn);
    EXPECT_EQ(res.status, 200) << conn.received();
    if (c.expect == Expect::complete) {
      EXPECT_TRUE(res.complete) << conn.received();
      std::string want = c.scripts.back().pieces.size() == 1 ? k_good_body : "data: 1\n\ndata: 2\n\n";
      EXPECT_EQ(res.body, want);
    } else {
      EXPECT_FALSE(res.complete) << "a broken stream must end abnormally: " << conn.received();
      EXPECT_EQ(res.body, "data: 1\n\n");
    }
  }

  FakeUpstream upstream;
  TempDir dir;
  int port = 0;
};

TEST_P(FaultSignals, TheClientGetsWhatTheFaultGivesAndSigtermStillExitsZero) {
  const Condition c = conditions().at(static_cast<std::size_t>(std::get<0>(GetParam())));
  const int signal = std::get<1>(GetParam());
  for (const Scripted& s : c.scripts) {
    upstream.push(s);
  }
  ChildProcess serve = start(c);
  RawConnection conn(port);
  ASSERT_TRUE(reach(c, conn)) << c.name;
  serve.send_signal(signal);
  ASSERT_TRUE(serve.wait_for_stderr(signal == SIGHUP ? "reloaded" : "shutting down")) << serve.err();
  play_out(c, conn);
  check(c, conn, serve);
  if (signal == SIGHUP) {
    serve.send_signal(SIGTERM);
  }
  RunResult result = serve.wait();
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

INSTANTIATE_TEST_SUITE_P(FaultMatrix, FaultSignals,
                         ::testing::Combine(::testing::Range(0, 18), ::testing::Values(SIGHUP, SIGTERM)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& p) {
                           return std::string(
                                      conditions().at(static_cast<std::size_t>(std::get<0>(p.param))).name) +
                                  (std::get<1>(p.param) == SIGHUP ? "_Reload" : "_Sigterm");
                         });

} // namespace
} // namespace keyshim::test
