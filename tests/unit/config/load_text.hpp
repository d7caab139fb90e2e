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

} // namespace keyshim::config::test_support
