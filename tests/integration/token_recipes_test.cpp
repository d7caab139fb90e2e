// The README's recipes for tokens that expire (Vertex AI, Azure OpenAI with
// Entra ID, an OAuth token command), as written there, through the built
// binary: each pool file is taken from the README, its base_url's host
// pointed at a fake upstream, and the command it names is a fake on PATH
// that prints what the real one prints, and refuses other arguments.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <regex>

namespace keyshim::test {
namespace {

using namespace std::chrono_literals;

// The ```toml block after `<!-- recipe-test: NAME -->` in the README.
std::string readme_recipe(const std::string& name) {
  std::string readme = read_file(std::string(KEYSHIM_SOURCE_DIR) + "/README.md");
  std::size_t marker = readme.find("<!-- recipe-test: " + name + " -->");
  std::size_t begin = readme.find("```toml\n", marker);
  std::size_t end = readme.find("```\n", begin + 8);
  if (marker == std::string::npos || begin == std::string::npos || end == std::string::npos) {
    return "";
  }
  return readme.substr(begin + 8, end - begin - 8);
}

// A fake `program` that checks its arguments are `args` and prints `output`.
void fake_program(const TempDir& bin, const std::string& program, const std::string& args,
                  const std::string& output) {
  bin.write(program,
            "#!/bin/sh\n[ \"$*\" = '" + args + "' ] || { echo \"" + program +
                ": unexpected arguments: $*\" >&2; exit 2; }\n" + output + "\n",
            0700);
}

class TokenRecipes : public ::testing::Test {
protected:
  // Serve the README's recipe `name`, its upstream host replaced by the fake's.
  ChildProcess serve(const std::string& name) {
    std::string recipe = readme_recipe(name);
    EXPECT_FALSE(recipe.empty()) << "README.md has no recipe " << name;
    std::string pool = std::regex_replace(recipe, std::regex(R"(base_url = "https://[^/"]+)"),
                                          "base_url = \"" + upstream.base_url());
    std::string path = dir.write("keys.toml", pool, 0600);
    port = unused_loopback_port();
    RunOptions options;
    options.timeout = 60s;
    options.env = {{"PATH", bin.path() + ":" + std::getenv("PATH")}};
    ChildProcess child = ChildProcess::start(
        {KEYSHIM_BINARY, "serve", "-c", path, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
    EXPECT_TRUE(child.wait_for_stderr("listening on")) << child.err();
    return child;
  }

  std::string status() {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get("/status");
    return res ? res->body : "";
  }

  // The one request the upstream saw after `target` was posted to keyshim.
  SeenRequest relayed(const std::string& target) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Post(target, R"({"model":"m","messages":[]})", "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    std::vector<SeenRequest> seen = upstream.seen();
    return seen.empty() ? SeenRequest{} : seen.back();
  }

  FakeUpstream upstream;
  TempDir dir;
  TempDir bin;
  int port = 0;
};

TEST_F(TokenRecipes, VertexAiForClaudeCode) {
  fake_program(bin, "gcloud", "auth print-access-token", "echo ya29.fake-vertex-token");
  ChildProcess keyshim = serve("vertex");
  // What Claude Code sends with ANTHROPIC_VERTEX_BASE_URL=http://127.0.0.1:8787/vertex.
  SeenRequest request = relayed("/vertex/projects/my-project/locations/us-east5/publishers/anthropic/models/"
                                "claude-sonnet-4-5:streamRawPredict");
  EXPECT_EQ(request.target, "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"
                            "claude-sonnet-4-5:streamRawPredict");
  EXPECT_EQ(request.header("Authorization"), "Bearer ya29.fake-vertex-token");
  std::string state = status();
  EXPECT_NE(state.find(R"("token":{"expires":null,"next_run":"20)"), std::string::npos)
      << "key_cmd_refresh schedules the next run: " << state;
  keyshim.send_signal(SIGTERM);
  EXPECT_EQ(keyshim.wait().exit_code, 0);
}

TEST_F(TokenRecipes, AzureOpenAiWithEntraId) {
  // az 2.54 and later: expires_on in seconds since the epoch, expiresOn local.
  fake_program(bin, "az", "account get-access-token --resource https://cognitiveservices.azure.com -o json",
               R"sh(at=$(( $(date +%s) + 3600 ))
cat <<EOF
{
  "accessToken": "eyJ0eXAi.fake-entra-token",
  "expiresOn": "$(date -d "@$at" '+%Y-%m-%d %H:%M:%S.000000')",
  "expires_on": $at,
  "subscription": "0b1f6471-1bf0-4dda-aec3-cb9272f09590",
  "tenant": "54826b22-38d6-4fb2-bad9-b7b93a3e9c5a",
  "tokenType": "Bearer"
}
EOF)sh");
  ChildProcess keyshim = serve("azure");
  SeenRequest request = relayed("/azure/chat/completions");
  EXPECT_EQ(request.target, "/openai/v1/chat/completions");
  EXPECT_EQ(request.header("Authorization"), "Bearer eyJ0eXAi.fake-entra-token");
  std::string state = status();
  EXPECT_NE(state.find(R"("token":{"expires":"20)"), std::string::npos) << "az's expiry was read: " << state;
  keyshim.send_signal(SIGTERM);
  EXPECT_EQ(keyshim.wait().exit_code, 0);
}

TEST_F(TokenRecipes, AnOAuthTokenCommandOfYourOwn) {
  fake_program(bin, "curl",
               "-sSf -d @/home/me/.config/keyshim/token-request https://login.corp.example/oauth2/token",
               R"(echo '{"access_token":"oauth-fake-token","token_type":"Bearer","expires_in":3599}')");
  ChildProcess keyshim = serve("oauth");
  SeenRequest request = relayed("/gateway/chat/completions");
  EXPECT_EQ(request.target, "/v1/chat/completions");
  EXPECT_EQ(request.header("Authorization"), "Bearer oauth-fake-token");
  std::string state = status();
  EXPECT_NE(state.find(R"("token":{"expires":"20)"), std::string::npos) << state;
  keyshim.send_signal(SIGTERM);
  EXPECT_EQ(keyshim.wait().exit_code, 0);
}

} // namespace
} // namespace keyshim::test
