// `keyshim status` and `keyshim reload` run as black boxes against a real
// `keyshim serve` child process, which forwards to a scripted fake upstream.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/process_probe.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using keyshim::test::ChildProcess;
using keyshim::test::FakeUpstream;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::Scripted;
using keyshim::test::TempDir;

namespace {

using namespace std::chrono_literals;

constexpr const char* k_reload_key_1 = "sk-status-test-key-one-0001";
constexpr const char* k_reload_key_2 = "sk-status-test-key-two-0002";
constexpr const char* k_key_3 = "sk-status-test-key-three-0003";

std::string key_entry(const std::string& label, const std::string& key) {
  return "\n[[keys]]\nlabel = \"" + label + "\"\n" + key + "\n";
}

std::string pool(int port, const std::string& upstream, const std::string& keys,
                 const std::string& server_extra = "") {
  return "[server]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\ndrain_timeout = \"2s\"\n" +
         server_extra + "\n[upstream]\nbase_url = \"" + upstream + "\"\nconnect_timeout = \"2s\"\n" + keys;
}

std::string two_keys() {
  return key_entry("first", std::string("key = \"") + k_reload_key_1 + "\"") +
         key_entry("second", std::string("key = \"") + k_reload_key_2 + "\"");
}

// A `keyshim serve` child on its own port and pool file, ready once it
// answers /health; stopped with SIGTERM, which must end it with exit 0.
class ServeFixture : public ::testing::Test {
protected:
  void start(const std::string& server_extra = "", const std::string& keys = two_keys()) {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    m_path = m_dir.write("keys.toml", pool(m_port, m_upstream.base_url(), keys, server_extra));
    RunOptions options = child_options();
    options.timeout = 60s;
    m_serve.emplace(ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", m_path, "--listen", "127.0.0.1:" + std::to_string(m_port)}, options));
    ASSERT_TRUE(wait_until_ready()) << m_serve->err();
  }

  void TearDown() override {
    if (m_serve) {
      m_serve->send_signal(SIGTERM);
      RunResult result = m_serve->wait();
      EXPECT_EQ(result.exit_code, 0) << result.err;
      EXPECT_EQ(result.all_output().find("status-test-key"), std::string::npos) << result.all_output();
    }
  }

  // The child never reads the developer's own pool file or colour settings.
  RunOptions child_options() const {
    RunOptions options;
    options.env = {{"KEYSHIM_CONFIG", m_dir.path() + "/absent.toml"},
                   {"HOME", m_dir.path()},
                   {"XDG_RUNTIME_DIR", m_dir.path()}};
    options.unset_env = {"NO_COLOR", "XDG_CONFIG_HOME"};
    return options;
  }

  RunResult run(std::vector<std::string> args, RunOptions options) const {
    args.insert(args.begin(), KEYSHIM_BINARY);
    return keyshim::test::run_binary(args, options);
  }
  RunResult run(std::vector<std::string> args) const { return run(std::move(args), child_options()); }

  bool wait_until_ready() const { return keyshim::test::wait_for_health(m_port); }

  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) const {
    httplib::Client client("127.0.0.1", m_port);
    return client.Get(path, headers);
  }

  int forward_one_request() const {
    httplib::Client client("127.0.0.1", m_port);
    httplib::Result result = client.Post("/v1/chat/completions", R"({"messages":[]})", "application/json");
    return result ? result->status : 0;
  }

  std::optional<keyshim::util::Json> status_json() const {
    httplib::Result result = get("/status");
    return result ? keyshim::util::parse_json(result->body) : std::nullopt;
  }

  long long total_keys() const {
    std::optional<keyshim::util::Json> status = status_json();
    const keyshim::util::Json* totals = status ? status->find("totals") : nullptr;
    return totals && totals->find("total") ? static_cast<long long>(totals->find("total")->as_number()) : -1;
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(m_port); }

  FakeUpstream m_upstream;
  TempDir m_dir;
  int m_port = 0;
  std::string m_path;
  std::optional<ChildProcess> m_serve;
};

// Not keyshim: a server on its own loopback port that answers /status with
// keyshim's shape and whatever pid the test names, as a stranger's could.
class FakeStatusServer {
public:
  explicit FakeStatusServer(long long pid) {
    m_server.Get("/status", [pid](const httplib::Request&, httplib::Response& response) {
      response.set_content(R"({"pools":[],"generation":0,"pid":)" + std::to_string(pid) + "}",
                           "application/json");
    });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
  }
  ~FakeStatusServer() {
    m_server.stop();
    m_thread.join();
  }
  FakeStatusServer(const FakeStatusServer&) = delete;
  FakeStatusServer& operator=(const FakeStatusServer&) = delete;

  int port() const { return m_port; }

private:
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
};

using StatusCommand = ServeFixture;
using ReloadCommand = ServeFixture;

} // namespace

TEST_F(StatusCommand, NoInstanceExitsOneAndSaysHowToStartOne) {
  int port = keyshim::test::unused_loopback_port();
  RunResult result = run({"status", "--listen", "127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("keyshim: error: no keyshim answering on 127.0.0.1:" + std::to_string(port) +
                            " (start it with `keyshim serve` or `keyshim service install`)"),
            std::string::npos)
      << result.err;
}

TEST_F(StatusCommand, NonLoopbackListenIsRefused) {
  RunResult result = run({"status", "--listen", "192.0.2.1:8787"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("--listen 192.0.2.1:8787"), std::string::npos) << result.err;
}

TEST_F(StatusCommand, JsonPrintsTheStatusAnswerAsReceived) {
  start();
  RunResult result = run({"status", "--listen", address(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  httplib::Result direct = get("/status");
  ASSERT_TRUE(direct);
  EXPECT_EQ(result.out, direct->body + "\n");
  std::optional<keyshim::util::Json> json = keyshim::util::parse_json(result.out);
  ASSERT_TRUE(json);
  EXPECT_EQ(static_cast<pid_t>(json->find("pid")->as_number()), m_serve->pid());
}

TEST_F(StatusCommand, TableShowsEachKeyHealthAndTotalsFromThePoolFilesAddress) {
  start();
  // The first key is rate-limited for a minute; the request fails over.
  Scripted limited;
  limited.status = 429;
  limited.headers = {{"Retry-After", "60"}, {"Content-Type", "application/json"}};
  limited.pieces = {R"({"error":{"message":"slow down","code":"rate_limit_exceeded"}})"};
  m_upstream.push(limited);
  ASSERT_EQ(forward_one_request(), 200);

  RunResult result = run({"status", "-c", m_path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::string& out = result.out;
  EXPECT_NE(out.find("on " + address() + ", pid " + std::to_string(m_serve->pid()) + ", pool file " + m_path),
            std::string::npos)
      << out;
  for (const char* column :
       {"LABEL", "FINGERPRINT", "STATE", "RESUMES IN", "REASON", "OK", "ERR", "LAST", "IN FLIGHT"}) {
    EXPECT_NE(out.find(column), std::string::npos) << column;
  }
  std::size_t first = out.find("\nfirst ");
  std::size_t second = out.find("\nsecond ");
  ASSERT_NE(first, std::string::npos) << out;
  ASSERT_NE(second, std::string::npos) << out;
  std::string first_row = out.substr(first + 1, out.find('\n', first + 1) - first - 1);
  std::string second_row = out.substr(second + 1, out.find('\n', second + 1) - second - 1);
  EXPECT_NE(first_row.find("cooling"), std::string::npos) << first_row;
  EXPECT_TRUE(first_row.find(" 59s ") != std::string::npos || first_row.find(" 1m ") != std::string::npos)
      << first_row;
  EXPECT_NE(first_row.find("429"), std::string::npos) << first_row;
  EXPECT_NE(second_row.find("available"), std::string::npos) << second_row;
  EXPECT_NE(second_row.find("200"), std::string::npos) << second_row;
  EXPECT_NE(out.find("2 keys: 1 available, 1 cooling, 0 disabled"), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << "no colour when stdout is not a terminal";
  EXPECT_EQ(result.all_output().find("status-test-key"), std::string::npos);
}

// A success that says the key has no requests left: the next request goes
// to the other key, and the table shows the figures and why the first rests.
TEST_F(StatusCommand, TableShowsTheLimitsTheProviderReported) {
  start();
  m_upstream.push(keyshim::test::json(200, "{}",
                                      {{"x-ratelimit-limit-requests", "500"},
                                       {"x-ratelimit-remaining-requests", "0"},
                                       {"x-ratelimit-reset-requests", "50s"}}));
  ASSERT_EQ(forward_one_request(), 200);
  ASSERT_EQ(forward_one_request(), 200);
  ASSERT_EQ(m_upstream.seen().at(1).header("Authorization"), std::string("Bearer ") + k_reload_key_2);

  RunResult result = run({"status", "-c", m_path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_NE(out.find("quota: 0 requests left"), std::string::npos) << out;
  std::size_t table = out.find("\nQUOTA ");
  ASSERT_NE(table, std::string::npos) << out;
  std::string row = out.substr(table + 1).substr(out.substr(table + 1).find('\n') + 1);
  row = row.substr(0, row.find('\n'));
  EXPECT_EQ(row.rfind("first ", 0), 0u) << row;
  EXPECT_NE(row.find(" requests "), std::string::npos) << row;
  EXPECT_NE(row.find(" 0 "), std::string::npos) << row;
  EXPECT_NE(row.find(" 500 "), std::string::npos) << row;
}

// Two requests in one clock minute (the test starts one with seconds to
// spare) reach the first key's limit; the third goes to the second key.
TEST_F(StatusCommand, TableShowsTheUseAgainstEachOwnLimitAndAKeyAtOneAsCooling) {
  start("", key_entry("first", std::string("key = \"") + k_reload_key_1 + "\"\nrequests_per_minute = 2\n" +
                                   "tokens_per_day = \"2M\"") +
                key_entry("second", std::string("key = \"") + k_reload_key_2 + "\""));
  const auto now = std::chrono::system_clock::now();
  if (std::chrono::floor<std::chrono::minutes>(now) + 1min - now < 5s) {
    std::this_thread::sleep_for(6s);
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(forward_one_request(), 200);
  }
  RunResult result = run({"status", "-c", m_path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& out = result.out;
  std::size_t limits = out.find("\nLIMITS ");
  ASSERT_NE(limits, std::string::npos) << out;
  std::string minute_row = out.substr(out.find("\nfirst ", limits) + 1);
  minute_row = minute_row.substr(0, minute_row.find('\n'));
  EXPECT_NE(minute_row.find("requests 2/2 per minute"), std::string::npos) << out;
  EXPECT_NE(out.find("tokens 0/2000000 per day"), std::string::npos) << out;
  EXPECT_EQ(out.find("\nsecond ", limits), std::string::npos) << "a key without limits has no row: " << out;
  std::string first_row = out.substr(out.find("\nfirst ") + 1);
  first_row = first_row.substr(0, first_row.find('\n'));
  EXPECT_NE(first_row.find("cooling"), std::string::npos) << first_row;
  EXPECT_NE(first_row.find("own limit: requests 2/2 per minute"), std::string::npos) << first_row;

  std::optional<keyshim::util::Json> json = status_json();
  ASSERT_TRUE(json);
  const keyshim::util::Json& first = json->find("pools")->items().at(0).find("keys")->items().at(0);
  const keyshim::util::Json& minute = first.find("limits")->items().at(0);
  EXPECT_EQ(minute.string_at("name"), "requests_per_minute");
  EXPECT_EQ(minute.find("used")->as_unsigned(), 2u);
  EXPECT_EQ(minute.find("limit")->as_unsigned(), 2u);
  EXPECT_LE(minute.find("resets_in_ms")->as_number(), 60'000);
}

TEST_F(StatusCommand, ClientTokenFromTheFileIsSentAndAMismatchIsNamed) {
  start("client_token = \"right-token-123\"\n");
  EXPECT_EQ(run({"status", "-c", m_path}).exit_code, 0);

  std::string other = m_dir.write(
      "other.toml", pool(m_port, m_upstream.base_url(), two_keys(), "client_token = \"wrong-token-456\"\n"));
  RunResult wrong = run({"status", "-c", other});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("refused the client_token from " + other), std::string::npos) << wrong.err;

  RunResult none = run({"status", "--listen", address()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("requires a client_token"), std::string::npos) << none.err;
  EXPECT_EQ((wrong.all_output() + none.all_output()).find("right-token"), std::string::npos);
}

TEST_F(ReloadCommand, NoInstanceExitsOne) {
  std::string path = m_dir.write(
      "keys.toml", pool(keyshim::test::unused_loopback_port(), m_upstream.base_url(), two_keys()));
  RunResult result = run({"reload", "-c", path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no keyshim answering"), std::string::npos) << result.err;
}

TEST_F(ReloadCommand, NewKeyIsServedOnceTheInstanceConfirms) {
  start();
  ASSERT_EQ(total_keys(), 2);
  m_dir.write("keys.toml", pool(m_port, m_upstream.base_url(),
                                two_keys() + key_entry("third", std::string("key = \"") + k_key_3 + "\"")));
  RunResult result = run({"reload", "-c", m_path});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("reloaded: 3 keys"), std::string::npos) << result.out;
  EXPECT_EQ(total_keys(), 3);

  RunResult status = run({"status", "-c", m_path});
  EXPECT_NE(status.out.find("\nthird "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("3 keys: 3 available"), std::string::npos) << status.out;
  EXPECT_EQ((result.all_output() + status.all_output()).find("status-test-key"), std::string::npos);
}

TEST_F(ReloadCommand, BrokenFileIsNotSentAndTheOldPoolKeepsServing) {
  start();
  long long generation = static_cast<long long>(status_json()->find("generation")->as_number());
  m_dir.write("keys.toml", pool(m_port, m_upstream.base_url(), two_keys()) + "\n[[keys]]\nlabel = \n");
  RunResult result = run({"reload", "-c", m_path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(m_path + ":"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("not reloading"), std::string::npos) << result.err;

  EXPECT_EQ(total_keys(), 2);
  EXPECT_EQ(static_cast<long long>(status_json()->find("generation")->as_number()), generation);
  EXPECT_EQ(forward_one_request(), 200);
  // Everything the instance logged before this request line is in by now.
  ASSERT_TRUE(m_serve->wait_for_stderr("POST /v1/chat/completions 200"));
  EXPECT_EQ(m_serve->err().find("SIGHUP"), std::string::npos) << "the instance was not signalled";
}

// The file is fine where `reload` runs but not where serve runs (a key_env
// set only in the user's shell): the instance rejects it and says why in
// its log, and reload must not claim success.
TEST_F(ReloadCommand, FileTheInstanceRejectsIsReportedAndPointsToItsLog) {
  start();
  m_dir.write("keys.toml",
              pool(m_port, m_upstream.base_url(),
                   two_keys() + key_entry("third", "key_env = \"KEYSHIM_RELOAD_TEST_ONLY_HERE\"")));
  RunOptions options = child_options();
  options.env.emplace_back("KEYSHIM_RELOAD_TEST_ONLY_HERE", k_key_3);
  RunResult result = run({"reload", "-c", m_path}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("rejected the file and keeps serving its current pool"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("log"), std::string::npos) << result.err;
  EXPECT_EQ(total_keys(), 2);
  EXPECT_TRUE(m_serve->wait_for_stderr("reload rejected"));
}

// issue 9: a 50,000-part table header overflowed toml++'s stack and a
// SIGHUP took the whole instance down. Signalled directly, as a file
// written behind `reload`'s back would be.
TEST_F(ReloadCommand, DeeplyNestedFileOnSighupIsRejectedAndTheInstanceKeepsServing) {
  start();
  std::string header = "[a";
  for (int i = 1; i < 50'000; ++i) {
    header += ".a";
  }
  m_dir.write("keys.toml", pool(m_port, m_upstream.base_url(), two_keys()) + header + "]\n");
  m_serve->send_signal(SIGHUP);
  ASSERT_TRUE(m_serve->wait_for_stderr("reload rejected")) << m_serve->err().substr(0, 2000);
  EXPECT_NE(m_serve->err().find("table header nests deeper than 64 levels"), std::string::npos)
      << m_serve->err().substr(0, 2000);
  EXPECT_EQ(total_keys(), 2);
  EXPECT_EQ(forward_one_request(), 200);
}

// issue 19: a fake /status naming the pid of the user's own process made
// reload kill it. The process named here is a `sleep`: it must live on.
TEST_F(ReloadCommand, PidNamedByAServerThatIsNotKeyshimIsNotSignalled) {
  ChildProcess victim = ChildProcess::start({"sleep", "60"});
  FakeStatusServer fake(victim.pid());
  std::string path = m_dir.write("fake.toml", pool(fake.port(), m_upstream.base_url(), two_keys()));
  RunResult result = run({"reload", "-c", path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("pid " + std::to_string(victim.pid()) + " is not keyshim (it runs "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("not signalling it"), std::string::npos) << result.err;
  EXPECT_TRUE(keyshim::test::is_running(victim.pid()));
}

// A real keyshim of the same user, but on another port: the fake does not
// get to reload it. keyshim hides its descriptors from its own user (it is
// not dumpable), so only a caller allowed to read them (root) sees the
// mismatch; anyone else falls back on the socket owner's uid, which a
// same-user fake passes.
TEST_F(ReloadCommand, PidOfAKeyshimNotHoldingTheAddressIsNotSignalled) {
  start();
  if (access(("/proc/" + std::to_string(m_serve->pid()) + "/fd").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "this user cannot read a non-dumpable keyshim's descriptors";
  }
  long long generation = static_cast<long long>(status_json()->find("generation")->as_number());
  FakeStatusServer fake(m_serve->pid());
  std::string path = m_dir.write("fake.toml", pool(fake.port(), m_upstream.base_url(), two_keys()));
  RunResult result = run({"reload", "-c", path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("pid " + std::to_string(m_serve->pid()) +
                            " does not hold the listening socket 127.0.0.1:" + std::to_string(fake.port()) +
                            "; not signalling it"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(static_cast<long long>(status_json()->find("generation")->as_number()), generation);
  EXPECT_EQ(m_serve->err().find("SIGHUP"), std::string::npos) << m_serve->err();
}
