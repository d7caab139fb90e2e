// The JSON parser behind util::parse_json.
#include "util/json.hpp"

#include <charconv>
#include <cstdint>

namespace keyshim::util {
namespace {

// Recursive descent over the RFC 8259 grammar. Every failure records the
// first problem and unwinds with nullopt; nothing throws.
class Parser {
public:
  Parser(std::string_view text, int max_depth) : m_text(text), m_max_depth(max_depth) {}

  std::optional<Json> document() {
    skip_space();
    std::optional<Json> value = parse_value(0);
    if (!value) {
      return std::nullopt;
    }
    skip_space();
    if (m_pos != m_text.size()) {
      return fail("unexpected text after the document");
    }
    return value;
  }

  JsonError error() const { return m_error; }

private:
  std::nullopt_t fail(const char* message) {
    if (m_error.message.empty()) {
      m_error = JsonError{m_pos, message};
    }
    return std::nullopt;
  }

  bool at_end() const { return m_pos >= m_text.size(); }
  char peek() const { return at_end() ? '\0' : m_text[m_pos]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++m_pos;
    }
  }

  bool literal(std::string_view word) {
    if (m_text.substr(m_pos, word.size()) != word) {
      return false;
    }
    m_pos += word.size();
    return true;
  }

  std::optional<Json> parse_value(int depth) {
    if (depth > m_max_depth) {
      return fail("nesting too deep");
    }
    switch (peek()) {
    case '{':
      return parse_object(depth);
    case '[':
      return parse_array(depth);
    case '"': {
      std::optional<std::string> text = parse_string();
      if (!text) {
        return std::nullopt;
      }
      return Json::make_string(std::move(*text));
    }
    case 't':
      return literal("true") ? std::optional(Json::make_bool(true)) : fail("invalid literal");
    case 'f':
      return literal("false") ? std::optional(Json::make_bool(false)) : fail("invalid literal");
    case 'n':
      return literal("null") ? std::optional(Json()) : fail("invalid literal");
    default:
      return parse_number();
    }
  }

  std::optional<Json> parse_object(int depth) {
    ++m_pos; // '{'
    Json::Object members;
    skip_space();
    if (peek() == '}') {
      ++m_pos;
      return Json::make_object();
    }
    while (true) {
      skip_space();
      if (peek() != '"') {
        return fail("expected a member name");
      }
      std::optional<std::string> name = parse_string();
      if (!name) {
        return std::nullopt;
      }
      skip_space();
      if (peek() != ':') {
        return fail("expected ':'");
      }
      ++m_pos;
      skip_space();
      std::optional<Json> value = parse_value(depth + 1);
      if (!value) {
        return std::nullopt;
      }
      // Keep duplicates in order (set() would merge them); find() takes the first.
      members.emplace_back(std::move(*name), std::move(*value));
      skip_space();
      if (peek() == ',') {
        ++m_pos;
        continue;
      }
      if (peek() == '}') {
        ++m_pos;
        return Json::make_object(std::move(members));
      }
      return fail("expected ',' or '}'");
    }
  }

  std::optional<Json> parse_array(int depth) {
    ++m_pos; // '['
    Json::Array items;
    skip_space();
    if (peek() == ']') {
      ++m_pos;
      return Json::make_array();
    }
    while (true) {
      skip_space();
      std::optional<Json> value = parse_value(depth + 1);
      if (!value) {
        return std::nullopt;
      }
      items.push_back(std::move(*value));
      skip_space();
      if (peek() == ',') {
        ++m_pos;
        continue;
      }
      if (peek() == ']') {
        ++m_pos;
        return Json::make_array(std::move(items));
      }
      return fail("expected ',' or ']'");
    }
  }

  std::optional<Json> parse_number() {
    std::size_t start = m_pos;
    auto digits = [this] {
      std::size_t from = m_pos;
      while (!at_end() && peek() >= '0' && peek() <= '9') {
        ++m_pos;
      }
      return m_pos - from;
    };
    if (peek() == '-') {
      ++m_pos;
    }
    if (peek() == '0') {
      ++m_pos;
    } else if (digits() == 0) {
      m_pos = start;
      return fail("expected a value");
    }
    if (peek() == '.') {
      ++m_pos;
      if (digits() == 0) {
        return fail("expected digits after '.'");
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      ++m_pos;
      if (peek() == '+' || peek() == '-') {
        ++m_pos;
      }
      if (digits() == 0) {
        return fail("expected exponent digits");
      }
    }
    double value = 0;
    const char* first = m_text.data() + start;
    const char* last = m_text.data() + m_pos;
    auto [end, ec] = std::from_chars(first, last, value);
    // Out of range numbers become infinities; JSON cannot represent those.
    if (ec == std::errc::result_out_of_range) {
      return fail("number out of range");
    }
    if (ec != std::errc() || end != last) {
      return fail("invalid number");
    }
    return Json::make_number(value);
  }

  std::optional<unsigned> parse_hex4() {
    if (m_text.size() - m_pos < 4) {
      return std::nullopt;
    }
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = m_text[m_pos++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
    }
    return value;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // \uXXXX, joining a UTF-16 surrogate pair into one code point.
  bool parse_unicode_escape(std::string& out) {
    std::optional<unsigned> unit = parse_hex4();
    if (!unit) {
      return false;
    }
    std::uint32_t cp = *unit;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (m_text.substr(m_pos, 2) != "\\u") {
        return false;
      }
      m_pos += 2;
      std::optional<unsigned> low = parse_hex4();
      if (!low || *low < 0xDC00 || *low > 0xDFFF) {
        return false;
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return false; // a lone low surrogate
    }
    append_utf8(out, cp);
    return true;
  }

  std::optional<std::string> parse_string() {
    ++m_pos; // '"'
    std::string out;
    while (true) {
      if (at_end()) {
        return fail("unterminated string");
      }
      char c = m_text[m_pos];
      if (c == '"') {
        ++m_pos;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return fail("control character in string");
      }
      if (c != '\\') {
        out += c;
        ++m_pos;
        continue;
      }
      ++m_pos;
      if (at_end()) {
        return fail("unterminated string");
      }
      char escape = m_text[m_pos++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u':
        if (!parse_unicode_escape(out)) {
          return fail("invalid \\u escape");
        }
        break;
      default:
        --m_pos;
        return fail("invalid escape");
      }
    }
  }

  std::string_view m_text;
  int m_max_depth;
  std::size_t m_pos = 0;
  JsonError m_error;
};

} // namespace

std::optional<Json> parse_json(std::string_view text, JsonError* error, int max_depth) {
  Parser parser(text, max_depth);
  std::optional<Json> value = parser.document();
  if (!value && error != nullptr) {
    *error = parser.error();
  }
  return value;
}

} // namespace keyshim::util
