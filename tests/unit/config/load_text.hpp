#pragma once
// Loading pool-file text in the config tests, with the file named keys.toml.
#include "config/loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keyshim::config::test_support {

inline LoadResult load(const std::string& text) {
  return load_pool_text(text, "keys.toml");
}

// The Config `text` describes; a test failure (and an empty Config) when it has problems.
inline Config load_ok(const std::string& text) {
  LoadResult result = load(text);
  EXPECT_TRUE(result.ok()) << result.problems_text();
  return result.ok() ? *result.config : Config{};
}

// The problems `text` has, as problems_text() prints them; a test failure when it has none.
inline std::string problems(const std::string& text) {
  LoadResult result = load(text);
  EXPECT_FALSE(result.ok());
  return result.problems_text();
}

} // namespace keyshim::config::test_support
