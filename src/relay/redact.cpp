#include "relay/redact.hpp"

namespace keyshim::relay {

std::string redact_keys(std::string text, const pool::KeyPool& pool) {
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const util::Secret& secret = pool.key(i).secret;
    const std::string& key = secret.reveal();
    if (key.empty()) {
      continue;
    }
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
      text.replace(at, key.size(), secret.fingerprint());
      at += secret.fingerprint().size();
    }
  }
  return text;
}

} // namespace keyshim::relay
