#include "util/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>

namespace keyshim::util {

Secret::Secret(std::string value) : m_value(std::move(value)), m_fingerprint(fingerprint_of(m_value)) {
}

bool Secret::equals(std::string_view candidate) const {
  if (candidate.size() != m_value.size()) {
    return false;
  }
  return CRYPTO_memcmp(candidate.data(), m_value.data(), m_value.size()) == 0;
}

std::string fingerprint_of(std::string_view value) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(value.data()), value.size(), digest.data());
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out(value.substr(0, 4));
  out += '~';
  for (std::size_t i = 0; i < 4; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 0xf];
  }
  return out;
}

} // namespace keyshim::util
