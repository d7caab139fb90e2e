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

void Redactor::append(std::string& out, std::string_view text) const {
  const Needle* first = nullptr;
  std::size_t at = std::string_view::npos;
  for (const Needle& needle : m_needles) {
    std::size_t found = text.find(needle.text);
    if (found < at) {
      at = found;
      first = &needle;
    }
  }
  if (!first) {
    out.append(text);
    return;
  }
  out.append(text.substr(0, at)).append(first->fingerprint);
  append(out, text.substr(at + first->text.size())); // at most one level per occurrence
}

} // namespace keyshim::relay
