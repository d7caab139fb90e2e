#include "relay/redact.hpp"

#include "util/ascii.hpp"

#include <openssl/crypto.h>

#include <algorithm>

namespace keyshim::relay {

Redactor::Redactor(const pool::KeyPool& pool) : Redactor(std::vector<const pool::KeyPool*>{&pool}) {
}

Redactor::Redactor(const std::vector<const pool::KeyPool*>& pools) {
  for (const pool::KeyPool* pool : pools) {
    for (std::size_t i = 0; i < pool->size(); ++i) {
      add(pool->key(i).secret);
    }
  }
  // Longest first: a key that extends another key is replaced whole, since
  // ties at the same position go to the needle found first.
  std::stable_sort(m_needles.begin(), m_needles.end(),
                   [](const Needle& a, const Needle& b) { return a.text.size() > b.text.size(); });
}

void Redactor::add(const util::Secret& secret) {
  const std::string& key = secret.reveal();
  if (key.empty()) {
    return;
  }
  m_needles.push_back({key, secret.fingerprint()});
  std::string encoded = util::percent_encode(key);
  if (encoded != key) {
    m_needles.push_back({std::move(encoded), secret.fingerprint()});
    std::string lower_hex = util::percent_encode(key, true); // %2f as well as %2F
    if (lower_hex != m_needles.back().text) {
      m_needles.push_back({std::move(lower_hex), secret.fingerprint()});
    }
  }
}

Redactor::~Redactor() {
  for (Needle& needle : m_needles) {
    OPENSSL_cleanse(needle.text.data(), needle.text.size());
  }
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
  std::vector<std::size_t> next; // per needle, once the first key is found
  std::size_t pos = 0;
  while (true) {
    const Needle* first = nullptr;
    std::size_t at = std::string_view::npos;
    for (std::size_t i = 0; i < m_needles.size(); ++i) {
      std::size_t found = next.empty() || next[i] < pos ? text.find(m_needles[i].text, pos) : next[i];
      if (!next.empty()) {
        next[i] = found;
      }
      if (found < at) {
        at = found;
        first = &m_needles[i];
      }
    }
    if (!first) {
      break;
    }
    if (next.empty()) {
      next.resize(m_needles.size(), 0); // 0: searched again from past this replacement
    }
    out.append(text.substr(pos, at - pos)).append(first->fingerprint);
    pos = at + first->text.size();
  }
  out.append(text.substr(pos));
}

} // namespace keyshim::relay
