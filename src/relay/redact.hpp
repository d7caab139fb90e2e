#pragma once
// Upstreams sometimes echo the key they were given ("Incorrect API key
// provided: sk-abc...", a `Location: ...?key=...`). Every occurrence of a pool
// key, raw or percent-encoded, is replaced by its fingerprint before the text
// reaches a log or the client. Built once per loaded pool; the keys of the
// file never change, but a key_cmd key's token does: the tokens sent now
// (and the ones they replaced) are looked for as well, taken again from the
// pools whenever a token has changed anywhere (KeyPool::token_epoch, one
// atomic load per call). So apply and append are for the event loop's
// thread only.
#include "pool/key_pool.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {

class Redactor {
public:
  explicit Redactor(const pool::KeyPool& pool);
  // Every key of every pool: a key must not reach a client of any pool.
  explicit Redactor(const std::vector<const pool::KeyPool*>& pools);
  ~Redactor(); // wipes its copies of the keys
  Redactor(const Redactor&) = delete;
  Redactor& operator=(const Redactor&) = delete;

  // `text` with each key replaced by its fingerprint.
  std::string apply(std::string_view text) const;
  // Append `text`, redacted, to `out` (no copy when no key occurs in it).
  void append(std::string& out, std::string_view text) const;
  // The length of the longest text replaced (a key's percent-encoded form):
  // a prefix of a text cut this far past its end redacts like the whole.
  // key_cmd tokens included, so it is for the event loop's thread as well.
  std::size_t longest() const {
    const std::vector<Needle>& all = needles();
    return all.empty() ? 0 : all.front().text.size();
  }

private:
  struct Needle {
    std::string text; // the key, or its percent-encoded form
    std::string fingerprint;
  };
  static void add(std::vector<Needle>& needles, const util::Secret& secret);
  const std::vector<Needle>& needles() const;

  std::vector<Needle> m_needles;                   // the file's keys
  std::vector<const pool::KeyPool*> m_token_pools; // pools with key_cmd keys
  // The file's keys and the key_cmd tokens sent now and just before, as of
  // m_tokens_epoch.
  mutable std::vector<Needle> m_with_tokens;
  mutable std::vector<util::Secret> m_tokens;
  mutable std::uint64_t m_tokens_epoch = 0;
};

} // namespace keyshim::relay
