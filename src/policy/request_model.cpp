#include "policy/request_model.hpp"

#include <algorithm>

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

std::optional<std::string> usable(std::string_view name) {
  bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (name.empty() || name.size() > k_max_model_name || !printable) {
    return std::nullopt;
  }
  return std::string(name);
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
      if (!scan.string(value, escaped) || escaped) {
        return std::nullopt; // not a string, or one with escapes: no model name has them
      }
      return usable(value);
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
  return usable(rest.substr(0, end));
}

} // namespace

std::optional<std::string> request_model(std::string_view target, std::string_view body) {
  if (std::optional<std::string> model = model_in_body(body)) {
    return model;
  }
  return model_in_path(target);
}

} // namespace keyshim::policy
