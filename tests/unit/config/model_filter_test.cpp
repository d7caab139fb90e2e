// Which models a key serves: the glob patterns of `models` and
// `exclude_models`, and how the pool file sets them for a pool and per key.
#include "config/model_filter.hpp"
#include "unit/config/load_text.hpp"

#include <gtest/gtest.h>

using namespace keyshim::config;
using keyshim::config::test_support::load;
using keyshim::config::test_support::load_ok;
using keyshim::config::test_support::problems;

namespace {

ModelFilter only(std::vector<std::string> models, std::vector<std::string> excluded = {}) {
  return ModelFilter{std::move(models), std::move(excluded)};
}

ModelFilter all_but(std::vector<std::string> excluded) {
  return ModelFilter{std::nullopt, std::move(excluded)};
}

} // namespace

TEST(GlobMatch, StarMatchesAnyRunAndQuestionMarkExactlyOneCharacter) {
  EXPECT_TRUE(glob_match("gpt-4o*", "gpt-4o"));
  EXPECT_TRUE(glob_match("gpt-4o*", "gpt-4o-mini-2024-07-18"));
  EXPECT_FALSE(glob_match("gpt-4o*", "gpt-4"));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("*-mini", "o4-mini"));
  EXPECT_FALSE(glob_match("*-mini", "o4-mini-high"));
  EXPECT_TRUE(glob_match("claude-*-4-*", "claude-sonnet-4-5"));
  EXPECT_TRUE(glob_match("o?", "o3"));
  EXPECT_FALSE(glob_match("o?", "o"));
  EXPECT_FALSE(glob_match("o?", "o3-pro"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbZc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYYbZ"));
}

TEST(GlobMatch, AWholeNameMatchesOnlyItselfIgnoringAsciiCase) {
  EXPECT_TRUE(glob_match("gpt-4o", "gpt-4o"));
  EXPECT_TRUE(glob_match("GPT-4o", "gpt-4O"));
  EXPECT_FALSE(glob_match("gpt-4o", "gpt-4o-mini"));
  EXPECT_FALSE(glob_match("gpt-4o", "xgpt-4o"));
  EXPECT_TRUE(glob_match("models/gemini-2.5-pro", "models/gemini-2.5-pro")); // no special '/' or '.'
  EXPECT_FALSE(glob_match("gemini-2.5-pro", "gemini-2x5-pro"));
}

TEST(GlobMatch, ManyStarsOnALongNameEndQuickly) {
  std::string name(200, 'a');
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*a*a*b", name));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*a*a*a*a*a*a*", name));
}

TEST(ModelFilter, AKeyWithoutListsServesEveryModel) {
  ModelFilter filter;
  EXPECT_FALSE(filter.restricted());
  EXPECT_TRUE(filter.serves("gpt-5"));
  EXPECT_EQ(filter.text(), "");
}

TEST(ModelFilter, ServedMeansMatchingModelsAndNoExcludedPattern) {
  ModelFilter filter = only({"gpt-4o*", "o3"}, {"gpt-4o-audio*"});
  EXPECT_TRUE(filter.restricted());
  EXPECT_TRUE(filter.serves("gpt-4o"));
  EXPECT_TRUE(filter.serves("o3"));
  EXPECT_FALSE(filter.serves("o3-pro"));
  EXPECT_FALSE(filter.serves("gpt-4o-audio-preview"));
  EXPECT_EQ(filter.text(), "gpt-4o*, o3 except gpt-4o-audio*");
}

TEST(ModelFilter, ExcludeModelsAloneServesEverythingElse) {
  ModelFilter filter = all_but({"gpt-5*", "o1*"});
  EXPECT_TRUE(filter.restricted());
  EXPECT_TRUE(filter.serves("gpt-4o"));
  EXPECT_FALSE(filter.serves("gpt-5-codex"));
  EXPECT_FALSE(filter.serves("o1"));
  EXPECT_EQ(filter.text(), "every model except gpt-5*, o1*");
}

TEST(ModelPatterns, ThePoolsListsAreTheDefaultAndAKeysOwnListReplacesThem) {
  Config config = load_ok(R"([pools.openai]
models = ["gpt-4o*", "o3*"]
exclude_models = ["*-audio*"]

[[pools.openai.keys]]
label = "pool-lists"
key = "sk-models-1"

[[pools.openai.keys]]
label = "own-models"
key = "sk-models-2"
models = ["gpt-5*"]

[[pools.openai.keys]]
label = "no-exclusions"
key = "sk-models-3"
exclude_models = []

[[pools.openai.keys]]
label = "every-model"
key = "sk-models-4"
models = ["*"]
exclude_models = []
)");
  const std::vector<KeyConfig>& keys = config.pools.at(0).keys;
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0].models, only({"gpt-4o*", "o3*"}, {"*-audio*"}));
  EXPECT_EQ(keys[1].models, only({"gpt-5*"}, {"*-audio*"})); // each list is replaced on its own
  EXPECT_EQ(keys[2].models, only({"gpt-4o*", "o3*"}));
  EXPECT_TRUE(keys[3].models.serves("gpt-4o-audio-preview"));
}

TEST(ModelPatterns, KeysServeEveryModelWhenNothingIsSet) {
  Config config = load_ok("[[keys]]\nkey = 'sk-models-unset'\n");
  EXPECT_FALSE(config.pools.at(0).keys.at(0).models.restricted());
}

TEST(ModelPatterns, BadListsAreErrorsWithTheirPositionAndFix) {
  EXPECT_EQ(problems("[upstream]\nmodels = []\n[[keys]]\nkey = 'sk-m'\n"),
            "keys.toml:2:10: upstream: \"models\" is empty, so its keys would serve no model; list models "
            "like [\"gpt-4o*\"], or remove it to serve every model\n");
  EXPECT_EQ(problems("[[keys]]\nkey = 'sk-m'\nexclude_models = [\"gpt-5\", \"\"]\n"),
            "keys.toml:3:18: keys[1]: \"exclude_models\" item 2 is empty; write a model name or a pattern "
            "like \"gpt-4o*\"\n");
  EXPECT_EQ(problems("[[keys]]\nkey = 'sk-m'\nmodels = [\"gpt-4o\", 4]\n"),
            "keys.toml:3:10: keys[1]: \"models\" must be an array of strings; item 2 is an integer\n");
  EXPECT_EQ(problems("[pools.x]\nmodels = \"gpt-4o\"\n[[pools.x.keys]]\nkey = 'sk-m'\n"),
            "keys.toml:2:10: pools.x: \"models\" must be an array of strings, not a string\n");
  EXPECT_NE(problems("[[keys]]\nkey = 'sk-m'\nmodels = [\"gpt 4o\"]\n").find("item 1 has a space"),
            std::string::npos);
}
