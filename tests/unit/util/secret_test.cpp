#include "util/secret.hpp"

#include <gtest/gtest.h>

#include <new>
#include <string>
#include <string_view>

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

namespace {

// 15 characters: libstdc++ keeps it in the string's inline buffer, inside
// the Secret object itself, so the object's bytes show whether it was wiped.
constexpr std::string_view k_short_key = "sk-wipe-me-0015";

// Whether the key's bytes are in `object`. Without its first character, which
// clearing a string already overwrites with its terminator.
bool holds_key(const void* object, std::size_t size) {
  std::string_view bytes(static_cast<const char*>(object), size);
  return bytes.find(k_short_key.substr(1)) != std::string_view::npos;
}

} // namespace

TEST(Wipe, ZeroesTheWholeCapacityAndLeavesTheBufferEmpty) {
  std::string buffer(100, 'k');
  buffer.resize(10); // the 90 bytes past the size still hold key bytes
  const char* data = buffer.data();
  std::size_t capacity = buffer.capacity();
  keyshim::util::wipe(buffer);
  EXPECT_TRUE(buffer.empty());
  ASSERT_EQ(buffer.data(), data) << "wipe must not reallocate, or the old buffer is left as it was";
  ASSERT_EQ(buffer.capacity(), capacity);
  EXPECT_EQ(std::string_view(data, capacity), std::string(capacity, '\0'));
}

TEST(Secret, DestructionWipesTheKeyBytes) {
  alignas(Secret) unsigned char storage[sizeof(Secret)];
  auto* secret = new (storage) Secret(std::string(k_short_key));
  ASSERT_TRUE(holds_key(storage, sizeof storage)) << "the key is not stored inline";
  secret->~Secret();
  EXPECT_FALSE(holds_key(storage, sizeof storage));
}

TEST(Secret, MovingAwayLeavesNoKeyBytesBehind) {
  Secret from(std::string{k_short_key});
  Secret to(std::move(from));
  EXPECT_EQ(to.reveal(), k_short_key);
  EXPECT_FALSE(holds_key(&from, sizeof from));

  Secret assigned("sk-other-key");
  assigned = std::move(to);
  EXPECT_EQ(assigned.reveal(), k_short_key);
  EXPECT_FALSE(holds_key(&to, sizeof to));
}
