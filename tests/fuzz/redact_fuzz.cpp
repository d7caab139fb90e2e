// Redaction stands between upstream text (error bodies, header values) and
// the client and logs. Whatever the keys and the text, it must not crash or
// take more than linear-ish time, and no key may survive in what it returns.
// The input is the pool's keys, one per line, a blank line, then the text.
#include "config/value_parsers.hpp"
#include "fuzz_check.hpp"
#include "pool/key_pool.hpp"
#include "relay/redact.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace keyshim;

// A clock is needed to build a pool; redaction never reads it.
class StoppedClock final : public util::Clock {
public:
  util::TimePoint now() const override { return {}; }
};

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<config::KeyConfig> keys;
  while (!input.empty() && keys.size() < 8) {
    std::size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view{} : input.substr(nl + 1);
    if (line.empty()) {
      break;
    }
    if (config::key_material_problem(line).empty()) { // what the loader would accept as a key
      config::KeyConfig key;
      key.label = "k" + std::to_string(keys.size());
      key.secret = util::Secret(std::string(line));
      keys.push_back(std::move(key));
    }
  }
  StoppedClock clock;
  pool::KeyPool pool(keys, config::Strategy::ordered, clock);
  relay::Redactor redactor(pool);

  std::string out = redactor.apply(input);
  std::string appended = "prefix ";
  redactor.append(appended, input);
  KEYSHIM_FUZZ_CHECK(appended == "prefix " + out);

  // A key of over four characters must not remain. Its fingerprint starts
  // with its first four characters, and one key's fingerprint may contain
  // another key, so fingerprints are blanked out before looking.
  std::string rest = out;
  for (const config::KeyConfig& key : keys) {
    replace_all(rest, key.secret.fingerprint(), "\x01");
  }
  for (const config::KeyConfig& key : keys) {
    const std::string& secret = key.secret.reveal();
    KEYSHIM_FUZZ_CHECK(secret.size() <= 4 || rest.find(secret) == std::string::npos);
  }
  return 0;
}
