#include "relay/redact.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keyshim::relay {
namespace {

std::vector<config::KeyConfig> keys_of(const std::vector<std::string>& secrets) {
  std::vector<config::KeyConfig> keys;
  for (const std::string& secret : secrets) {
    config::KeyConfig key;
    key.label = "k" + std::to_string(keys.size());
    key.secret = util::Secret(secret);
    keys.push_back(std::move(key));
  }
  return keys;
}

TEST(Redactor, EveryOccurrenceOfAPoolKeyBecomesItsFingerprint) {
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk-first-key-000", "sk-second-key-11"}), config::Strategy::ordered, clock);
  Redactor redact(pool);
  const std::string& first = pool.key(0).secret.fingerprint();
  const std::string& second = pool.key(1).secret.fingerprint();
  EXPECT_EQ(redact.apply("bad key sk-first-key-000, also sk-first-key-000 and sk-second-key-11"),
            "bad key " + first + ", also " + first + " and " + second);
  EXPECT_EQ(redact.apply("sk-first-key-000sk-first-key-000"), first + first);
}

TEST(Redactor, PercentEncodedKeyBecomesItsFingerprint) {
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk/+=AbC"}), config::Strategy::ordered, clock);
  Redactor redact(pool);
  const std::string& fingerprint = pool.key(0).secret.fingerprint();
  EXPECT_EQ(redact.apply("Location: /cb?key=sk%2F%2B%3DAbC&x=1"),
            "Location: /cb?key=" + fingerprint + "&x=1");
  EXPECT_EQ(redact.apply("raw sk/+=AbC and encoded sk%2F%2B%3DAbC"),
            "raw " + fingerprint + " and encoded " + fingerprint);
}

TEST(Redactor, TextWithoutKeysIsUnchanged) {
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk-first-key-000"}), config::Strategy::ordered, clock);
  Redactor redact(pool);
  EXPECT_EQ(redact.apply(""), "");
  EXPECT_EQ(redact.apply("{\"error\":\"rate limited, sk-first-key-00 is close\"}"),
            "{\"error\":\"rate limited, sk-first-key-00 is close\"}");
  EXPECT_EQ(redact.apply("h\xc3\xa9llo %41"), "h\xc3\xa9llo %41");
}

TEST(Redactor, AppendAddsTheRedactedTextAfterWhatIsThere) {
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk-first-key-000"}), config::Strategy::ordered, clock);
  Redactor redact(pool);
  std::string out = "X-Echo: ";
  redact.append(out, "key sk-first-key-000!");
  EXPECT_EQ(out, "X-Echo: key " + pool.key(0).secret.fingerprint() + "!");
  redact.append(out, " plain");
  EXPECT_EQ(out, "X-Echo: key " + pool.key(0).secret.fingerprint() + "! plain");
}

TEST(Redactor, AKeyThatExtendsAnotherKeyIsRedactedWhole) {
  // Two keys where one is a prefix of the other: the longer one must not be
  // cut at the shorter one, leaving its tail in the text.
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk-shared-1234", "sk-shared-1234-tail-secret"}), config::Strategy::ordered,
                     clock);
  Redactor redact(pool);
  std::string out = redact.apply("got sk-shared-1234-tail-secret");
  EXPECT_EQ(out, "got " + pool.key(1).secret.fingerprint());
  EXPECT_EQ(out.find("tail-secret"), std::string::npos) << out;
}

TEST(Redactor, AMegabyteRepeatingAKeyIsRedactedWhole) {
  // Found while writing tests/fuzz/redact_fuzz: each occurrence used to cost
  // a level of recursion (a stack overflow at a few hundred thousand) and a
  // fresh scan of the rest of the text for every other needle.
  test::FakeClock clock;
  pool::KeyPool pool(keys_of({"sk-echo", "sk-absent/key"}), config::Strategy::ordered, clock);
  Redactor redact(pool);
  const std::string& fingerprint = pool.key(0).secret.fingerprint();
  std::string text;
  std::string expected;
  for (int i = 0; i < 131'072; ++i) { // 1 MiB, the error body the relay keeps
    text += "sk-echo,";
    expected += fingerprint + ",";
  }
  EXPECT_EQ(redact.apply(text), expected);
}

TEST(Redactor, AnEmptyPoolChangesNothing) {
  test::FakeClock clock;
  pool::KeyPool pool({}, config::Strategy::ordered, clock);
  Redactor redact(pool);
  EXPECT_EQ(redact.apply("sk-anything"), "sk-anything");
}

} // namespace
} // namespace keyshim::relay

namespace keyshim::relay {
namespace {

TEST(Redactor, AKeyCmdKeysNewTokenAndTheOneBeforeAreRedactedToo) {
  test::FakeClock clock;
  std::vector<config::KeyConfig> keys = keys_of({"tok-loaded-0000", "sk-static-key-1"});
  keys[0].command = config::KeyCommand{{"token-command"}, std::chrono::minutes(1), std::nullopt};
  pool::KeyPool pool(std::move(keys), config::Strategy::ordered, clock);
  Redactor redact(pool);
  auto refresh = [&](const std::string& token) {
    clock.advance(std::chrono::minutes(1));
    ASSERT_TRUE(pool.begin_refresh(0));
    pool.finish_refresh(0, pool::RefreshResult{util::Secret(token), std::nullopt, ""});
  };
  refresh("tok-second-1111");
  EXPECT_EQ(redact.apply("got tok-second-1111 and tok-loaded-0000"),
            "got " + util::fingerprint_of("tok-second-1111") + " and " +
                util::fingerprint_of("tok-loaded-0000"));
  refresh("tok-third-22222");
  EXPECT_EQ(redact.apply("tok-third-22222 tok-second-1111 sk-static-key-1"),
            util::fingerprint_of("tok-third-22222") + " " + util::fingerprint_of("tok-second-1111") + " " +
                util::fingerprint_of("sk-static-key-1"));
}

TEST(Redactor, TheLongestTextReplacedCountsAKeyCmdKeysNewToken) {
  test::FakeClock clock;
  std::vector<config::KeyConfig> keys = keys_of({"tok-0", "sk-static"});
  keys[0].command = config::KeyCommand{{"token-command"}, std::chrono::minutes(1), std::nullopt};
  pool::KeyPool pool(std::move(keys), config::Strategy::ordered, clock);
  Redactor redact(pool);
  EXPECT_EQ(redact.longest(), std::string("sk-static").size());
  const std::string longer(64, 't');
  clock.advance(std::chrono::minutes(1));
  ASSERT_TRUE(pool.begin_refresh(0));
  pool.finish_refresh(0, pool::RefreshResult{util::Secret(longer), std::nullopt, ""});
  EXPECT_EQ(redact.longest(), longer.size());
}

} // namespace
} // namespace keyshim::relay
