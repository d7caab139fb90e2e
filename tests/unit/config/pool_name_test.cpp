// Which names a [pools.NAME] table may take: a path segment that needs no
// escaping, not one of keyshim's own endpoints, and not an API version that
// tools send to the default pool.
#include "config/pool_name.hpp"

#include <gtest/gtest.h>

namespace keyshim::config {
namespace {

TEST(PoolName, ApiVersionsAsProvidersWriteThemAreRecognised) {
  for (const char* name : {"v1", "v2", "v10", "v1beta", "v1alpha", "v1beta1", "v1alpha2", "v2beta",
                           "v1p1beta1", "v1.0", "v2.1", "v1.0beta3"}) {
    EXPECT_TRUE(is_api_version_name(name)) << name;
  }
}

TEST(PoolName, NamesThatMerelyStartWithVAreNotVersions) {
  for (const char* name : {"v", "vllm", "vertex", "v1-proxy", "v1_old", "v1gamma", "v1beta-x", "v1.", "v1p",
                           "openai", "anthropic", "my-proxy_2.v1", "1v", "vv1", ""}) {
    EXPECT_FALSE(is_api_version_name(name)) << name;
  }
}

TEST(PoolName, AVersionNameIsRefusedSayingWhatItWouldCapture) {
  EXPECT_EQ(pool_name_problem("v1"), "\"v1\" reads as an API version: its route /v1 would capture the paths "
                                     "tools send to the default pool, such as /v1/models; choose another "
                                     "pool name");
  EXPECT_NE(pool_name_problem("v1beta").find("/v1beta/models"), std::string::npos);
}

TEST(PoolName, ReservedAndMalformedNamesKeepTheirOwnReasons) {
  EXPECT_EQ(pool_name_problem("health"), "\"health\" is reserved (it would shadow /health); choose another "
                                         "pool name");
  EXPECT_NE(pool_name_problem("V1").find("a pool name is the first part of its URL path"), std::string::npos);
  EXPECT_NE(pool_name_problem(".."), "");
  EXPECT_NE(pool_name_problem("."), "");
  EXPECT_EQ(pool_name_problem("openai"), "");
  EXPECT_EQ(pool_name_problem("vertex"), "");
}

} // namespace
} // namespace keyshim::config
