#include "util/secret.hpp"

#include <gtest/gtest.h>

using keyshim::util::fingerprint_of;
using keyshim::util::Secret;

// Expected digests come from `printf %s VALUE | sha256sum`.
TEST(Fingerprint, IsFirstFourCharactersTildeAndEightHexOfSha256) {
  // sha256("sk-test") = f3abf2a6cc4f0098...
  EXPECT_EQ(fingerprint_of("sk-test"), "sk-t~f3abf2a6");
}

TEST(Fingerprint, ShortValuesKeepAllTheirCharacters) {
  // sha256("ab") = fb8e20fc2e4c3f24...
  EXPECT_EQ(fingerprint_of("ab"), "ab~fb8e20fc");
  // sha256("") = e3b0c44298fc1c14...
  EXPECT_EQ(fingerprint_of(""), "~e3b0c442");
}

TEST(Fingerprint, DiffersForKeysWithTheSamePrefix) {
  EXPECT_NE(fingerprint_of("sk-aaaa1"), fingerprint_of("sk-aaaa2"));
}

TEST(Secret, ExposesItsFingerprintAndRevealsTheValueOnlyOnRequest) {
  Secret secret("sk-test");
  EXPECT_EQ(secret.fingerprint(), "sk-t~f3abf2a6");
  EXPECT_EQ(secret.reveal(), "sk-test");
  EXPECT_FALSE(secret.empty());
}

TEST(Secret, DefaultConstructedIsEmpty) {
  Secret secret;
  EXPECT_TRUE(secret.empty());
  EXPECT_EQ(secret.reveal(), "");
}

TEST(Secret, EqualsComparesWholeValues) {
  Secret secret("token-123");
  EXPECT_TRUE(secret.equals("token-123"));
  EXPECT_FALSE(secret.equals("token-124"));
  EXPECT_FALSE(secret.equals("token-12"));
  EXPECT_FALSE(secret.equals("token-1234"));
  EXPECT_FALSE(secret.equals(""));
}
