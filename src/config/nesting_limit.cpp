// The nesting pre-scan. It follows TOML only as far as depth needs: which
// brackets open headers, arrays and inline tables, which dots separate key
// parts, and where strings and comments hide both. It never recurses: it
// must survive exactly the input that makes a recursive parser fail.
#include "config/nesting_limit.hpp"

#include <fmt/format.h>

#include <vector>

namespace keyshim::config {
namespace {

struct Position {
  int line = 1;
  int column = 1;
};

class NestingScanner {
public:
  explicit NestingScanner(std::string_view text) : m_text(text) {}

  std::optional<NestingProblem> scan();

private:
  // What the next non-space character belongs to.
  enum class Mode { key, header, after_header, value };
  // An open array or inline table: its closing bracket and its depth.
  struct Frame {
    char close;
    int depth;
  };

  char peek(std::size_t ahead = 0) const {
    return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0';
  }
  void advance(std::size_t count = 1);
  void skip_string();
  void skip_comment();
  void end_of_line();
  std::optional<NestingProblem> open(char closer);
  void close(char closer);
  void separator();
  std::optional<NestingProblem> key_part();
  std::optional<NestingProblem> structural(char c);
  static NestingProblem problem(Position at, std::string_view what, std::string_view fix);
  static NestingProblem value_problem(Position at) {
    return problem(at, "value nests", "settings take a plain value or a list of strings");
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
  Position m_at;
  Mode m_mode = Mode::key;
  int m_base = 0;         // depth the current key, header or value starts from
  int m_parts = 0;        // parts of the key or header being read
  Position m_start;       // where that key or header starts
  int m_header_depth = 0; // parts of the last table header: top-level keys sit below it
  std::vector<Frame> m_frames;
};

void NestingScanner::advance(std::size_t count) {
  for (; count > 0 && m_pos < m_text.size(); --count, ++m_pos) {
    if (m_text[m_pos] == '\n') {
      ++m_at.line;
      m_at.column = 1;
    } else {
      ++m_at.column;
    }
  }
}

// At a quote: past the string, or to the end of the line when a one-line
// string is unterminated (toml++ reports that).
void NestingScanner::skip_string() {
  char quote = peek();
  bool multi_line = peek(1) == quote && peek(2) == quote;
  advance(multi_line ? 3 : 1);
  while (m_pos < m_text.size()) {
    char c = peek();
    if (c == '\\' && quote == '"') {
      advance(2);
    } else if (c == '\n' && !multi_line) {
      return;
    } else if (c == quote && !multi_line) {
      advance();
      return;
    } else if (c == quote && peek(1) == quote && peek(2) == quote) {
      // Up to two more quotes still belong to the string: """say ""hi"""""
      advance(3);
      for (int extra = 0; extra < 2 && peek() == quote; ++extra) {
        advance();
      }
      return;
    } else {
      advance();
    }
  }
}

void NestingScanner::skip_comment() {
  while (m_pos < m_text.size() && peek() != '\n') {
    advance();
  }
}

// Arrays span lines; everything else ends with its line.
void NestingScanner::end_of_line() {
  if (m_frames.empty()) {
    m_mode = Mode::key;
    m_base = m_header_depth;
    m_parts = 0;
  }
}

std::optional<NestingProblem> NestingScanner::open(char closer) {
  int depth = m_base + 1;
  if (depth > k_max_nesting) {
    return value_problem(m_at);
  }
  m_frames.push_back({closer, depth});
  m_base = depth;
  m_mode = closer == '}' ? Mode::key : Mode::value;
  m_parts = 0;
  return std::nullopt;
}

void NestingScanner::close(char closer) {
  if (m_frames.empty() || m_frames.back().close != closer) {
    return; // unbalanced: toml++ reports it
  }
  m_frames.pop_back();
  m_base = m_frames.empty() ? m_header_depth : m_frames.back().depth;
  m_mode = Mode::value;
}

// ',' starts the next key of an inline table or the next value of an array.
void NestingScanner::separator() {
  if (m_frames.empty()) {
    return;
  }
  m_base = m_frames.back().depth;
  m_mode = m_frames.back().close == '}' ? Mode::key : Mode::value;
  m_parts = 0;
}

// A bare or quoted part of a key or header, or the dot before the next one.
std::optional<NestingProblem> NestingScanner::key_part() {
  if (m_parts == 0 && m_mode == Mode::key) {
    m_start = m_at;
  }
  ++m_parts;
  if (m_base + m_parts <= k_max_nesting) {
    return std::nullopt;
  }
  if (!m_frames.empty()) {
    return value_problem(m_start); // a key inside an inline table
  }
  if (m_mode == Mode::header) {
    return problem(m_start, "table header nests", "pool files have only [server], [upstream] and [[keys]]");
  }
  return problem(m_start, "dotted key nests", "settings are plain names such as listen = \"127.0.0.1:8787\"");
}

std::optional<NestingProblem> NestingScanner::structural(char c) {
  bool in_name = m_mode == Mode::key || m_mode == Mode::header;
  if (c == '[' && m_mode == Mode::key && m_frames.empty() && m_parts == 0) {
    m_mode = Mode::header; // "[server]" or "[[keys]]"
    m_start = m_at;
    m_base = 0;
    advance(peek(1) == '[' ? 2 : 1);
    return std::nullopt;
  }
  std::optional<NestingProblem> found;
  if ((c == '[' || c == '{') && m_mode == Mode::value) {
    found = open(c == '[' ? ']' : '}');
  } else if (c == ']' && m_mode == Mode::header) {
    m_header_depth = m_parts;
    m_mode = Mode::after_header;
  } else if (c == ']' || c == '}') {
    close(c);
  } else if (c == ',') {
    separator();
  } else if (c == '=' && m_mode == Mode::key) {
    m_base += m_parts;
    m_parts = 0;
    m_mode = Mode::value;
  } else if (c == '.' && in_name) {
    found = key_part();
  } else if (in_name && m_parts == 0) {
    found = key_part(); // the first part; later characters of it add nothing
  }
  advance();
  return found;
}

NestingProblem NestingScanner::problem(Position at, std::string_view what, std::string_view fix) {
  return {at.line, at.column, fmt::format("{} deeper than {} levels; {}", what, k_max_nesting, fix)};
}

std::optional<NestingProblem> NestingScanner::scan() {
  while (m_pos < m_text.size()) {
    char c = peek();
    if (c == '\n') {
      advance();
      end_of_line();
    } else if (c == ' ' || c == '\t' || c == '\r' || m_mode == Mode::after_header) {
      advance();
    } else if (c == '#') {
      skip_comment();
    } else if (c == '"' || c == '\'') {
      std::optional<NestingProblem> found;
      if ((m_mode == Mode::key || m_mode == Mode::header) && m_parts == 0) {
        found = key_part();
      }
      if (found) {
        return found;
      }
      skip_string();
    } else if (auto found = structural(c)) {
      return found;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<NestingProblem> find_deep_nesting(std::string_view text) {
  return NestingScanner(text).scan();
}

} // namespace keyshim::config
