// Health that survives a restart: `keyshim serve` saves it at the end of the
// drain and the next run starts from it (docs/behaviour.md §12).
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/http_shim.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/private_file.hpp"
#include "util/secret.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

namespace keyshim::test {
namespace {

class SavedHealth : public ::testing::Test {
protected:
  std::string write_pool(std::string text) {
    const std::string marker = "@UPSTREAM@";
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.replace(at, marker.size(), upstream.base_url());
    }
    return dir.write("keys.toml", text, 0600);
  }

  ChildProcess start(const std::string& pool_path) {
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.env = {{"XDG_STATE_HOME", dir.path() + "/state"}};
    ChildProcess child = ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", pool_path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
    EXPECT_TRUE(child.wait_for_stderr("listening on")) << child.err();
    return child;
  }

  // SIGTERM, and the whole log of the run once it has exited.
  std::string stop(ChildProcess& serve) {
    serve.send_signal(SIGTERM);
    RunResult result = serve.wait();
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.all_output();
  }

  RawResponse send(const std::string& method, const std::string& target) {
    RawConnection conn(port);
    conn.send(make_request(method, target, method == "POST" ? "{}" : ""));
    EXPECT_TRUE(conn.read_response());
    return parse_response(conn.received());
  }
  int post() { return send("POST", "/v1/chat/completions").status; }

  void write_state(const std::string& text) {
    std::string error;
    ASSERT_TRUE(util::write_private_file(state_path(), text, error)) << error;
  }

  std::string state_path() const { return dir.path() + "/state/keyshim/state.json"; }

  FakeUpstream upstream;
  TempDir dir;
  int port = 0;
};

// One key only, as a pool file that lost its first key would have it.
std::string pool_of_key(int i) {
  return "[upstream]\nbase_url = \"@UPSTREAM@\"\nconnect_timeout = \"2s\"\n[[keys]]\nlabel = \"k" +
         std::to_string(i) + "\"\nkey = \"" + test_key(i) + "\"\n";
}

TEST_F(SavedHealth, AKeyCoolingForAnHourStaysCoolingAcrossARestart) {
  upstream.push(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "3600"}}));
  std::string pool = write_pool(pool_toml(2));
  ChildProcess first = start(pool);
  ASSERT_EQ(post(), 200); // k0 answered 429 and cools for an hour; k1 served
  std::string first_log = stop(first);

  struct stat info {};
  ASSERT_EQ(::stat(state_path().c_str(), &info), 0) << first_log;
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  std::string saved = read_file(state_path());
  EXPECT_NE(saved.find(util::Secret(test_key(0)).fingerprint()), std::string::npos) << saved;
  EXPECT_NE(saved.find("\"cooling\""), std::string::npos) << saved;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(saved.find(test_key(i)), std::string::npos) << "the state file holds fingerprints, never keys";
  }

  ChildProcess second = start(pool);
  EXPECT_TRUE(second.wait_for_stderr("health restored from")) << second.err();
  ASSERT_EQ(post(), 200);
  ASSERT_EQ(upstream.request_count(), 3u);
  EXPECT_EQ(upstream.seen()[2].header("Authorization"), "Bearer " + test_key(1))
      << "k0 still cools after the restart: the request goes straight to k1";
  std::string status = send("GET", "/status").body;
  EXPECT_NE(status.find("\"cooling\""), std::string::npos) << status;
  stop(second);
}

TEST_F(SavedHealth, TheStateOfAKeyRemovedFromThePoolFileIsDropped) {
  upstream.push(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "3600"}}));
  ChildProcess first = start(write_pool(pool_toml(2)));
  ASSERT_EQ(post(), 200);
  stop(first);
  const std::string removed = util::Secret(test_key(0)).fingerprint();
  ASSERT_NE(read_file(state_path()).find(removed), std::string::npos);

  ChildProcess second = start(write_pool(pool_of_key(1)));
  ASSERT_EQ(post(), 200);
  stop(second);
  std::string saved = read_file(state_path());
  EXPECT_EQ(saved.find(removed), std::string::npos) << saved;
  EXPECT_NE(saved.find(util::Secret(test_key(1)).fingerprint()), std::string::npos) << saved;
}

TEST_F(SavedHealth, ADamagedStateFileIsIgnoredWithAWarningAndReplaced) {
  write_state("{\"keyshim_state\": 1, \"pools\": [");
  ChildProcess serve = start(write_pool(pool_toml(1)));
  EXPECT_TRUE(serve.wait_for_stderr("saved health ignored")) << serve.err();
  EXPECT_EQ(post(), 200);
  stop(serve);
  EXPECT_NE(read_file(state_path()).find("\"keyshim_state\":1"), std::string::npos);
}

TEST_F(SavedHealth, AStateFileOthersMayWriteIsIgnored) {
  write_state("{\"keyshim_state\":1,\"pools\":[]}\n");
  ::chmod(state_path().c_str(), 0666);
  ChildProcess serve = start(write_pool(pool_toml(1)));
  EXPECT_TRUE(serve.wait_for_stderr("is writable by other users")) << serve.err();
  stop(serve);
}

TEST_F(SavedHealth, StateFalseWritesNoFile) {
  upstream.push(json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "3600"}}));
  ChildProcess serve = start(write_pool(pool_toml(2, "", "state = false\n")));
  ASSERT_EQ(post(), 200);
  stop(serve);
  struct stat info {};
  EXPECT_NE(::stat(state_path().c_str(), &info), 0) << "state = false keeps nothing on disk";
}

} // namespace
} // namespace keyshim::test
