#include "util/roff.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

namespace keyshim::util::roff {
namespace {

// The code point of the UTF-8 sequence at text[at] and its length, or
// U+FFFD and 1 for a byte that does not start a valid sequence.
std::pair<std::uint32_t, std::size_t> decode_utf8(std::string_view text, std::size_t at) {
  constexpr std::uint32_t k_replacement = 0xFFFD;
  auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  std::uint8_t lead = byte(at);
  std::size_t length = 0;
  if (lead >= 0xC2 && lead < 0xE0) {
    length = 2;
  } else if (lead >= 0xE0 && lead < 0xF0) {
    length = 3;
  } else if (lead >= 0xF0 && lead < 0xF5) {
    length = 4;
  }
  if (length == 0 || at + length > text.size()) {
    return {k_replacement, 1};
  }
  std::uint32_t code = lead & (0x7Fu >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0u) != 0x80u) {
      return {k_replacement, 1};
    }
    code = (code << 6u) | (byte(at + i) & 0x3Fu);
  }
  bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  if (overlong || surrogate || code > 0x10FFFF) {
    return {k_replacement, 1};
  }
  return {code, length};
}

} // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  bool line_start = true;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    auto byte = static_cast<std::uint8_t>(c);
    if (byte >= 0x80) {
      auto [code, length] = decode_utf8(text, i);
      out += fmt::format("\\[u{:04X}]", code);
      i += length;
      line_start = false;
      continue;
    }
    if ((c == '.' || c == '\'') && line_start) {
      out += "\\&"; // a zero-width character: the line no longer starts a request
    }
    if (c == '\\') {
      out += "\\(rs";
    } else if (c == '-') {
      out += "\\-";
    } else if (c == '\n') {
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      out += ' ';
    } else {
      out += c;
    }
    line_start = c == '\n';
    ++i;
  }
  return out;
}

std::string bold(std::string_view text) {
  return "\\fB" + escape(text) + "\\fR";
}

std::string italic(std::string_view text) {
  return "\\fI" + escape(text) + "\\fR";
}

} // namespace keyshim::util::roff

namespace keyshim::util::roff {
namespace {

// A macro's argument, quoted: a '"' inside would end it.
std::string argument(std::string_view text) {
  std::string out = "\"";
  for (char c : escape(text)) {
    out += c == '"' ? std::string("\\(dq") : std::string(1, c);
  }
  return out + "\"";
}

} // namespace

std::string markup(std::string_view text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t open = text.find('`', at);
    std::size_t close = open == std::string_view::npos ? open : text.find('`', open + 1);
    if (close == std::string_view::npos) {
      out += escape(text.substr(at));
      break;
    }
    out += escape(text.substr(at, open - at));
    out += bold(text.substr(open + 1, close - open - 1));
    at = close + 1;
  }
  return out;
}

std::string sentence(std::string_view text) {
  std::string out(text);
  if (!out.empty() && out.front() >= 'a' && out.front() <= 'z') {
    out.front() = static_cast<char>(out.front() - 'a' + 'A');
  }
  if (!out.empty() && out.back() != '.') {
    out += '.';
  }
  return out;
}

Page::Page(std::string_view name, int section, std::string_view source, std::string_view manual,
           std::string_view generated_by) {
  m_out += fmt::format(".\\\" {}\n", escape(generated_by));
  m_out += fmt::format(".TH {} {} \"\" {} {}\n", argument(name), section, argument(source), argument(manual));
  m_out += ".nh\n.ad l\n";
}

void Page::section(std::string_view title) {
  m_out += fmt::format(".SH {}\n", argument(title));
  m_after_heading = true;
}

void Page::subsection(std::string_view title) {
  m_out += fmt::format(".SS {}\n", argument(title));
  m_after_heading = true;
}

void Page::paragraph(std::string_view marked) {
  if (!m_after_heading) {
    m_out += ".PP\n";
  }
  text(marked);
}

void Page::tagged(std::string_view tag_roff, std::string_view body_marked) {
  m_out += ".TP\n";
  roff_line(tag_roff);
  text(body_marked);
}

void Page::line_break() {
  roff_line(".br");
}

void Page::text(std::string_view marked) {
  m_out += markup(marked);
  m_out += '\n';
  m_after_heading = false;
}

void Page::roff_line(std::string_view roff) {
  m_out += roff;
  m_out += '\n';
  m_after_heading = false;
}

void Page::example(std::string_view text) {
  if (!m_after_heading) {
    m_out += ".PP\n";
  }
  m_out += ".RS 4\n.EX\n";
  std::string body = escape(text);
  m_out += body;
  if (!body.empty() && body.back() != '\n') {
    m_out += '\n';
  }
  m_out += ".EE\n.RE\n";
  m_after_heading = false;
}

} // namespace keyshim::util::roff
