#include "policy/request_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace keyshim::policy {
namespace {

// A forward-only reader of one JSON text, enough to find a top-level member:
// it checks structure only as far as it must to skip values correctly.
class Scanner {
public:
  explicit Scanner(std::string_view text) : m_text(text) {}

  bool eat(char c) {
    skip_space();
    if (m_at < m_text.size() && m_text[m_at] == c) {
      ++m_at;
      return true;
    }
    return false;
  }

  // A string at the cursor; `out` gets its raw contents (escapes undecoded),
  // `escaped` whether it had any.
  bool string(std::string_view& out, bool& escaped) {
    if (!eat('"')) {
      return false;
    }
    std::size_t start = m_at;
    escaped = false;
    while (m_at < m_text.size()) {
      char c = m_text[m_at];
      if (c == '"') {
        out = m_text.substr(start, m_at - start);
        ++m_at;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        ++m_at;
      }
      ++m_at;
    }
    return false;
  }

  // Skip one value of any kind; nested ones by depth, strings by their quotes.
  bool skip_value() {
    skip_space();
    if (m_at >= m_text.size()) {
      return false;
    }
    char c = m_text[m_at];
    if (c == '"') {
      std::string_view ignored;
      bool escaped = false;
      return string(ignored, escaped);
    }
    if (c != '{' && c != '[') {
      while (m_at < m_text.size() && m_text[m_at] != ',' && m_text[m_at] != '}' && m_text[m_at] != ']') {
        ++m_at;
      }
      return true;
    }
    int depth = 0;
    while (m_at < m_text.size()) {
      char d = m_text[m_at];
      if (d == '"') {
        std::string_view ignored;
        bool escaped = false;
        if (!string(ignored, escaped)) {
          return false;
        }
        continue;
      }
      ++m_at;
      depth += (d == '{' || d == '[') ? 1 : (d == '}' || d == ']') ? -1 : 0;
      if (depth == 0) {
        return true;
      }
    }
    return false;
  }

private:
  void skip_space() {
    while (m_at < m_text.size() &&
           (m_text[m_at] == ' ' || m_text[m_at] == '\t' || m_text[m_at] == '\n' || m_text[m_at] == '\r')) {
      ++m_at;
    }
  }

  std::string_view m_text;
  std::size_t m_at = 0;
};

bool plain(char c) {
  return c > 0x20 && c < 0x7f;
}

// 64-bit FNV-1a: stable across runs and builds, so a name keeps its identity
// (and its metrics series) over restarts. Not a defence against anyone: the
// client chooses the name and only cools its own requests' model.
std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3;
  }
  return hash;
}

// A name fit to show and to key health by is kept as it is. Any other
// (empty, too long, spaces, control bytes, non-ASCII, JSON escapes) still
// names *a* model, not "no model": one 429 for it must not cool the key for
// every model. It gets a bounded identity of its own: its first characters
// with anything but letters, digits and "-._:/@+" as '_', then '#' and a
// hash of the whole raw name.
std::string model_identity(std::string_view raw, bool escaped) {
  bool usable = !escaped && !raw.empty() && raw.size() <= k_max_model_name &&
                std::all_of(raw.begin(), raw.end(), plain);
  if (usable) {
    return std::string(raw);
  }
  constexpr std::string_view k_kept = "-._:/@+";
  std::string id;
  for (char c : raw.substr(0, k_model_identity_prefix)) {
    bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                k_kept.find(c) != std::string_view::npos;
    id += kept ? c : '_';
  }
  return fmt::format("{}#{:016x}", id, fnv1a(raw));
}

std::optional<std::string> model_in_body(std::string_view body) {
  Scanner scan(body);
  if (!scan.eat('{') || scan.eat('}')) {
    return std::nullopt;
  }
  // Bounded by the body: each member moves the cursor forward or ends the scan.
  do {
    std::string_view key;
    bool key_escaped = false;
    if (!scan.string(key, key_escaped) || !scan.eat(':')) {
      return std::nullopt;
    }
    if (key == "model" && !key_escaped) {
      std::string_view value;
      bool escaped = false;
      if (!scan.string(value, escaped)) {
        return std::nullopt; // not a string
      }
      return model_identity(value, escaped); // escapes stay undecoded: no real model name has them
    }
    if (!scan.skip_value()) {
      return std::nullopt;
    }
  } while (scan.eat(','));
  return std::nullopt;
}

// "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse" -> "gemini-2.5-pro".
std::optional<std::string> model_in_path(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  constexpr std::string_view k_segment = "/models/";
  std::size_t at = path.find(k_segment);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = path.substr(at + k_segment.size());
  std::size_t end = rest.find(':');
  if (end == std::string_view::npos) {
    return std::nullopt; // GET /v1/models/NAME describes a model; it does not use one
  }
  return model_identity(rest.substr(0, end), false);
}

} // namespace

std::optional<std::string> request_model(std::string_view target, std::string_view body) {
  if (std::optional<std::string> model = model_in_body(body)) {
    return model;
  }
  return model_in_path(target);
}

std::optional<std::string_view> top_level_string(std::string_view body, std::string_view name) {
  Scanner scan(body);
  if (!scan.eat('{') || scan.eat('}')) {
    return std::nullopt;
  }
  // Bounded by the body: each member moves the cursor forward or ends the scan.
  do {
    std::string_view key;
    bool escaped = false;
    if (!scan.string(key, escaped) || !scan.eat(':')) {
      return std::nullopt;
    }
    if (key == name && !escaped) {
      std::string_view value;
      return scan.string(value, escaped) ? std::optional<std::string_view>(value) : std::nullopt;
    }
    if (!scan.skip_value()) {
      return std::nullopt;
    }
  } while (scan.eat(','));
  return std::nullopt;
}

} // namespace keyshim::policy
