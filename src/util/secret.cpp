#include "util/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <array>

namespace keyshim::util {

Secret::Secret(std::string value) : m_value(std::move(value)), m_fingerprint(fingerprint_of(m_value)) {
  wipe(value); // moved from, but a short key's bytes stay in its inline buffer
}

// A moved-from std::string is empty, yet a short value (up to 15 bytes in
// libstdc++) was copied out of an inline buffer that still holds it.
Secret::Secret(Secret&& other) noexcept
    : m_value(std::move(other.m_value)), m_fingerprint(std::move(other.m_fingerprint)) {
  wipe(other.m_value);
}

Secret& Secret::operator=(const Secret& other) {
  if (this != &other) {
    wipe(m_value);
    m_value = other.m_value;
    m_fingerprint = other.m_fingerprint;
  }
  return *this;
}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe(m_value);
    m_value = std::move(other.m_value);
    m_fingerprint = std::move(other.m_fingerprint);
    wipe(other.m_value);
  }
  return *this;
}

Secret::~Secret() {
  wipe(m_value);
}

void wipe(std::string& buffer) {
  // resize() to the capacity reaches every byte the buffer owns without
  // reallocating; cleanse then zeroes them all.
  buffer.resize(buffer.capacity());
  OPENSSL_cleanse(buffer.data(), buffer.size());
  buffer.clear();
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
