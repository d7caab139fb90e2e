#include "relay/redact.hpp"

#include "util/ascii.hpp"

#include <openssl/crypto.h>

#include <algorithm>

namespace keyshim::relay {

Redactor::Redactor(const pool::KeyPool& pool) : Redactor(std::vector<const pool::KeyPool*>{&pool}) {
}

namespace {

// Longest first: a key that extends another key is replaced whole, since
// ties at the same position go to the needle found first.
template <class Needles> void longest_first(Needles& needles) {
  std::stable_sort(needles.begin(), needles.end(),
                   [](const auto& a, const auto& b) { return a.text.size() > b.text.size(); });
}

template <class Needles> void wipe_all(Needles& needles) {
  for (auto& needle : needles) {
    OPENSSL_cleanse(needle.text.data(), needle.text.size());
  }
}

} // namespace

Redactor::Redactor(const std::vector<const pool::KeyPool*>& pools) {
  for (const pool::KeyPool* pool : pools) {
    bool tokens = false;
    for (std::size_t i = 0; i < pool->size(); ++i) {
      add(m_needles, pool->key(i).secret);
      tokens = tokens || pool->key(i).command.has_value();
    }
    if (tokens) {
      m_token_pools.push_back(pool);
    }
  }
  longest_first(m_needles);
}

void Redactor::add(std::vector<Needle>& needles, const util::Secret& secret) {
  const std::string& key = secret.reveal();
  if (key.empty()) {
    return;
  }
  needles.push_back({key, secret.fingerprint()});
  std::string encoded = util::percent_encode(key);
  if (encoded != key) {
    needles.push_back({std::move(encoded), secret.fingerprint()});
    std::string lower_hex = util::percent_encode(key, true); // %2f as well as %2F
    if (lower_hex != needles.back().text) {
      needles.push_back({std::move(lower_hex), secret.fingerprint()});
    }
  }
}

// The needles to look for now. When a token changed since the last look,
// the key_cmd tokens are taken again: those sent now, and those they
// replaced (a request that sent one may still be reading its answer).
const std::vector<Redactor::Needle>& Redactor::needles() const {
  if (m_token_pools.empty()) {
    return m_needles;
  }
  const std::uint64_t epoch = pool::KeyPool::token_epoch();
  if (epoch == m_tokens_epoch) {
    return m_with_tokens.empty() ? m_needles : m_with_tokens;
  }
  std::vector<util::Secret> tokens;
  for (const pool::KeyPool* pool : m_token_pools) {
    for (std::size_t i = 0; i < pool->size(); ++i) {
      if (pool->key(i).command) {
        tokens.push_back(*pool->secret(i).secret);
      }
    }
  }
  std::vector<Needle> with_tokens = m_needles;
  for (const std::vector<util::Secret>* list : {&tokens, &m_tokens}) {
    for (const util::Secret& token : *list) {
      add(with_tokens, token);
    }
  }
  longest_first(with_tokens);
  wipe_all(m_with_tokens);
  m_with_tokens = std::move(with_tokens);
  m_tokens = std::move(tokens);
  m_tokens_epoch = epoch;
  return m_with_tokens;
}

Redactor::~Redactor() {
  wipe_all(m_needles);
  wipe_all(m_with_tokens);
}

std::string Redactor::apply(std::string_view text) const {
  std::string out;
  append(out, text);
  return out;
}

// Left to right, each time replacing the earliest occurrence of any needle.
// A loop, not a recursion per occurrence: a 1 MiB error body repeating a key
// would otherwise be 100,000 stack frames. Each needle's next occurrence is
// remembered once a key was found and searched again only when a replacement
// passed it, so a needle that is not there is not searched for again and
// again through the rest of the text.
void Redactor::append(std::string& out, std::string_view text) const {
  const std::vector<Needle>& all = needles();
  std::vector<std::size_t> next; // per needle, once the first key is found
  std::size_t pos = 0;
  while (true) {
    const Needle* first = nullptr;
    std::size_t at = std::string_view::npos;
    for (std::size_t i = 0; i < all.size(); ++i) {
      std::size_t found = next.empty() || next[i] < pos ? text.find(all[i].text, pos) : next[i];
      if (!next.empty()) {
        next[i] = found;
      }
      if (found < at) {
        at = found;
        first = &all[i];
      }
    }
    if (!first) {
      break;
    }
    if (next.empty()) {
      next.resize(all.size(), 0); // 0: searched again from past this replacement
    }
    out.append(text.substr(pos, at - pos)).append(first->fingerprint);
    pos = at + first->text.size();
  }
  out.append(text.substr(pos));
}

} // namespace keyshim::relay
