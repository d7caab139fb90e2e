#pragma once
// Man pages (roff). Everything the generated pages say comes from tables,
// the command line and prose in the generators, so it is escaped here, once:
// no text can start a request, change a font or turn into an escape sequence.
#include <string>
#include <string_view>

namespace keyshim::util::roff {

// `text` as roff input that renders as written: backslashes, hyphens (as
// "\-", so options and paths copy and paste), a '.' or '\'' that would start
// a line, and every non-ASCII character (as "\[uXXXX]", independent of the
// input encoding groff assumes). Control characters other than newlines
// become spaces.
std::string escape(std::string_view text);

// `text` escaped, in bold / in italics, back to the regular font after.
std::string bold(std::string_view text);
std::string italic(std::string_view text);

// `text` escaped, with `code spans` (between backticks) in bold. A backtick
// without its partner is kept as written.
std::string markup(std::string_view text);

// `text` as a sentence in a man page: its first letter capitalised and a
// full stop at its end, as CLI descriptions and table entries are written
// without ("pool file" -> "Pool file.").
std::string sentence(std::string_view text);

// A man page, built in order. Text arguments are escaped unless the name
// says roff; `marked` arguments go through markup().
class Page {
public:
  // .TH NAME SECTION "" SOURCE MANUAL, after a comment naming the generator;
  // then no hyphenation and a ragged right margin, so that paths and options
  // are never broken or spread out.
  Page(std::string_view name, int section, std::string_view source, std::string_view manual,
       std::string_view generated_by);

  void section(std::string_view title);    // .SH
  void subsection(std::string_view title); // .SS
  void paragraph(std::string_view marked); // .PP (left out right after a heading)
  // .TP: `tag_roff` (already roff, e.g. from bold()) over an indented body.
  void tagged(std::string_view tag_roff, std::string_view body_marked);
  void line_break();                     // .br: the next text starts a new line
  void text(std::string_view marked);    // a text line, continuing the paragraph
  void roff_line(std::string_view roff); // a line of roff, as given
  void example(std::string_view text);   // .EX ... .EE, each line as written

  const std::string& str() const { return m_out; }

private:
  std::string m_out;
  bool m_after_heading = false;
};

} // namespace keyshim::util::roff
