#pragma once
// API keys and tokens. A Secret has no formatter and no stream operator, so
// `fmt::format("{}", secret)` does not compile: the only printable forms are
// its fingerprint and the label the user gave it.
#include <string>
#include <string_view>

namespace keyshim::util {

class Secret {
public:
  Secret() = default;
  explicit Secret(std::string value);
  // Copies and moves leave no key bytes behind in the moved-from or
  // overwritten buffer, and destruction wipes them (a reload drops old keys).
  Secret(const Secret& other) = default;
  Secret(Secret&& other) noexcept;
  Secret& operator=(const Secret& other);
  Secret& operator=(Secret&& other) noexcept;
  ~Secret();

  // The key material itself, for the one place that needs it: the header or
  // query parameter of an upstream request, and redaction of echoed keys.
  const std::string& reveal() const { return m_value; }

  // First 4 characters, "~", first 8 hex digits of SHA-256 of the whole key.
  const std::string& fingerprint() const { return m_fingerprint; }

  bool empty() const { return m_value.empty(); }

  // Constant-time comparison, for client tokens.
  bool equals(std::string_view candidate) const;

private:
  std::string m_value;
  std::string m_fingerprint;
};

// Overwrite every byte `buffer` holds, its whole capacity, in a way the
// compiler cannot drop as a dead store (OPENSSL_cleanse), and leave it empty.
void wipe(std::string& buffer);

// fingerprint() for a value that is not (yet) a Secret.
std::string fingerprint_of(std::string_view value);

} // namespace keyshim::util
