// Pool files with [pools.NAME] tables: what they mean, and every way to get
// them wrong.
#include "config/loader.hpp"
#include "unit/config/load_text.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;
using keyshim::config::test_support::load;
using keyshim::config::test_support::load_ok;
using keyshim::config::test_support::problems;
using std::chrono::milliseconds;

namespace {

constexpr const char* k_three = R"([upstream]
base_url = "https://api.openai.com"
first_byte_timeout = "20m"
max_concurrent = 3

[[keys]]
label = "o1"
key = "sk-pools-openai-1"

[pools.anthropic]
base_url = "https://api.anthropic.com"
auth = "x-api-key"
max_wait = "30s"

[[pools.anthropic.keys]]
label = "a1"
key = "sk-ant-pools-1"
max_concurrent = 2

[[pools.anthropic.keys]]
label = "a2"
key = "sk-ant-pools-2"

[pools.gemini]
base_url = "https://generativelanguage.googleapis.com"
auth = "x-goog-api-key"

[[pools.gemini.keys]]
label = "o1"
key = "AIza-pools-1"
)";

} // namespace

TEST(LoadPools, TheDefaultPoolComesFirstThenTheNamedOnesInFileOrder) {
  Config config = load_ok(k_three);
  ASSERT_EQ(config.pools.size(), 3u);
  EXPECT_EQ(config.pools[0].name, "default");
  EXPECT_EQ(config.pools[0].route(), "/");
  EXPECT_EQ(config.pools[1].name, "anthropic");
  EXPECT_EQ(config.pools[1].route(), "/anthropic");
  EXPECT_EQ(config.pools[2].name, "gemini");
  EXPECT_EQ(config.key_count(), 4u);
  EXPECT_EQ(config.default_pool(), &config.pools[0]);
  EXPECT_EQ(config.find_pool("gemini"), &config.pools[2]);
  EXPECT_EQ(config.find_pool("nope"), nullptr);
}

TEST(LoadPools, EachPoolsKeysTakeThatPoolsSettings) {
  Config config = load_ok(k_three);
  const PoolConfig& anthropic = config.pools[1];
  ASSERT_EQ(anthropic.keys.size(), 2u);
  EXPECT_EQ(anthropic.keys[0].base_url.text(), "https://api.anthropic.com");
  EXPECT_EQ(anthropic.keys[0].auth.text(), "x-api-key");
  EXPECT_EQ(anthropic.keys[0].max_concurrent, 2);
  EXPECT_EQ(anthropic.keys[1].max_concurrent, 0); // unlimited: the pool sets none
  EXPECT_EQ(anthropic.upstream.max_wait, milliseconds(30'000));
  EXPECT_EQ(config.pools[0].keys[0].max_concurrent, 3); // from [upstream]
}

TEST(LoadPools, ANamedPoolDoesNotInheritTheDefaultPoolsSettings) {
  Config config = load_ok(k_three);
  EXPECT_EQ(config.pools[0].upstream.first_byte_timeout, milliseconds(1'200'000));
  EXPECT_EQ(config.pools[2].upstream.first_byte_timeout, UpstreamSettings{}.first_byte_timeout);
  EXPECT_FALSE(config.pools[2].upstream.max_concurrent);
  EXPECT_EQ(config.pools[2].upstream.max_wait, milliseconds(0));
}

TEST(LoadPools, LabelsNeedOnlyBeUniqueWithinAPool) {
  Config config = load_ok(k_three); // "o1" is in the default pool and in gemini
  EXPECT_EQ(config.pools[0].keys[0].label, "o1");
  EXPECT_EQ(config.pools[2].keys[0].label, "o1");
  EXPECT_NE(problems(std::string(k_three) + "[[pools.gemini.keys]]\nlabel = \"o1\"\nkey = \"AIza-2\"\n")
                .find("pools.gemini.keys[2]: label \"o1\" is already used by pools.gemini.keys[1]"),
            std::string::npos);
}

TEST(LoadPools, AFileMayHaveOnlyNamedPools) {
  Config config = load_ok("[pools.openai]\n[[pools.openai.keys]]\nkey = \"sk-only-named\"\n");
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].name, "openai");
  EXPECT_EQ(config.default_pool(), nullptr);
  EXPECT_EQ(config.pools[0].keys[0].base_url.text(), "https://api.openai.com"); // the built-in default
}

TEST(LoadPools, APoolWithoutKeysIsAProblemWithItsPosition) {
  EXPECT_EQ(problems("[pools.anthropic]\nauth = \"x-api-key\"\n"),
            "keys.toml:1:8: [pools.anthropic] has no keys: add a [[pools.anthropic.keys]] entry\n");
}

TEST(LoadPools, UpstreamSettingsWithoutDefaultKeysBesideNamedPoolsAreAProblem) {
  std::string text =
      "[upstream]\nmax_attempts = 2\n\n[pools.openai]\n[[pools.openai.keys]]\nkey = \"sk-x\"\n";
  EXPECT_NE(problems(text).find("[upstream] sets up the default pool, which has no [[keys]]"),
            std::string::npos);
}

TEST(LoadPools, NamesMustBeAPathSegmentAndNotReserved) {
  std::string keys = "\n[[pools.X.keys]]\nkey = \"sk-name\"\n";
  for (const char* bad : {"Anthropic", "-lead", "with space", "a/b"}) {
    std::string name = std::string("\"") + bad + "\"";
    std::string text = "[pools." + name + "]" + keys;
    text.replace(text.find("pools.X"), 7, "pools." + name);
    EXPECT_NE(problems(text).find("a pool name is the first part of its URL path"), std::string::npos) << bad;
  }
  for (const char* reserved : {"default", "health", "status", "metrics"}) {
    std::string text =
        std::string("[pools.") + reserved + "]\n[[pools." + reserved + ".keys]]\nkey = \"sk-r\"\n";
    EXPECT_NE(problems(text).find(std::string("\"") + reserved + "\" is reserved"), std::string::npos)
        << reserved;
  }
  EXPECT_EQ(load_ok("[pools.\"my-proxy_2.v1\"]\n[[pools.\"my-proxy_2.v1\".keys]]\nkey = \"sk-n\"\n")
                .pools.at(0)
                .route(),
            "/my-proxy_2.v1");
}

TEST(LoadPools, ANameThatReadsAsAnApiVersionIsRefusedWithOrWithoutADefaultPool) {
  std::string named_only = "[pools.v1beta]\n[[pools.v1beta.keys]]\nkey = \"sk-version\"\n";
  EXPECT_NE(problems(named_only)
                .find("1:8: [pools.v1beta]: \"v1beta\" reads as an API version: its route "
                      "/v1beta would capture the paths tools send to the default pool"),
            std::string::npos)
      << problems(named_only);
  std::string with_default = "[[keys]]\nkey = \"sk-default\"\n" + named_only;
  EXPECT_NE(problems(with_default).find("[pools.v1beta]: \"v1beta\" reads as an API version"),
            std::string::npos)
      << problems(with_default);
}

TEST(LoadPools, PoolsMustBeTables) {
  EXPECT_NE(problems("pools = 3\n").find("\"pools\" must hold [pools.NAME] tables"), std::string::npos);
  EXPECT_NE(problems("[pools]\nopenai = 1\n").find("\"pools.openai\" must be a table written [pools.openai]"),
            std::string::npos);
}

TEST(LoadPools, KeysOfAPoolMustBeArraysOfTables) {
  EXPECT_NE(problems("[pools.openai]\nkeys = \"sk-x\"\n")
                .find("\"pools.openai.keys\" must be written as [[pools.openai.keys]] tables"),
            std::string::npos);
}

TEST(LoadPools, UnknownSettingsInAPoolAreReportedWithThePoolsName) {
  std::string text = "[pools.openai]\nbase_ur = \"https://x\"\n[[pools.openai.keys]]\nkey = \"sk-x\"\n";
  EXPECT_NE(problems(text).find("pools.openai: unknown setting \"base_ur\"; did you mean \"base_url\"?"),
            std::string::npos);
  std::string key = "[pools.openai]\n[[pools.openai.keys]]\nkey = \"sk-x\"\nmax_wait = \"1s\"\n";
  EXPECT_NE(
      problems(key).find("pools.openai.keys[1]: unknown setting \"max_wait\"; it belongs in [upstream]"),
      std::string::npos);
}

TEST(LoadPools, TheSameKeyMayServeTwoPoolsButNotTwiceInOne) {
  std::string text = "[[keys]]\nkey = \"sk-shared\"\n[pools.b]\n[[pools.b.keys]]\nkey = \"sk-shared\"\n";
  EXPECT_EQ(load_ok(text).key_count(), 2u);
  std::string twice =
      "[pools.b]\n[[pools.b.keys]]\nkey = \"sk-shared\"\n[[pools.b.keys]]\nkey = \"sk-shared\"\n";
  EXPECT_NE(problems(twice).find("pools.b.keys[2]: same key as pools.b.keys[1]"), std::string::npos);
}

TEST(LoadPools, MaxWaitAndMaxConcurrentHaveBounds) {
  std::string keys = "[[keys]]\nkey = \"sk-bounds\"\n";
  EXPECT_NE(problems("[upstream]\nmax_wait = \"2h\"\n" + keys).find("max_wait"), std::string::npos);
  EXPECT_NE(problems("[upstream]\nmax_concurrent = 0\n" + keys).find("max_concurrent"), std::string::npos);
  EXPECT_EQ(load_ok("[upstream]\nmax_wait = \"1h\"\nmax_concurrent = 1\n" + keys).pools[0].upstream.max_wait,
            milliseconds(3'600'000));
}
