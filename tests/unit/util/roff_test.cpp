// Man page text: whatever a table or the CLI says renders as written.
#include "util/roff.hpp"

#include <gtest/gtest.h>

namespace keyshim::util::roff {
namespace {

TEST(RoffEscape, HyphensBecomeMinusSignsSoOptionsCopyAndPaste) {
  EXPECT_EQ(escape("--log-format"), "\\-\\-log\\-format");
}

TEST(RoffEscape, BackslashesCannotStartAnEscape) {
  EXPECT_EQ(escape("C:\\fBkeys"), "C:\\(rsfBkeys");
}

TEST(RoffEscape, LeadingDotOrQuoteCannotStartARequest) {
  EXPECT_EQ(escape(".SH x"), "\\&.SH x");
  EXPECT_EQ(escape("'br"), "\\&'br");
  EXPECT_EQ(escape("a\n.TH x"), "a\n\\&.TH x");
  EXPECT_EQ(escape("a.b 'c'"), "a.b 'c'"); // only at the start of a line
}

TEST(RoffEscape, NonAsciiBecomesUnicodeEscapesWhateverTheInputEncoding) {
  EXPECT_EQ(escape("a\xE2\x80\x94"
                   "b"),
            "a\\[u2014]b");                            // em dash
  EXPECT_EQ(escape("\xF0\x9F\x94\x91"), "\\[u1F511]"); // four bytes
  EXPECT_EQ(escape("\xC3\xA9"), "\\[u00E9]");
}

TEST(RoffEscape, InvalidUtf8BecomesTheReplacementCharacter) {
  EXPECT_EQ(escape("a\xFF"
                   "b"),
            "a\\[uFFFD]b");
  EXPECT_EQ(escape("\xE2\x80"), "\\[uFFFD]\\[uFFFD]");              // cut short
  EXPECT_EQ(escape("\xED\xA0\x80"), "\\[uFFFD]\\[uFFFD]\\[uFFFD]"); // a surrogate
}

TEST(RoffEscape, ControlCharactersBecomeSpaces) {
  EXPECT_EQ(escape("a\tb\x01"
                   "c"),
            "a b c");
}

TEST(RoffMarkup, BacktickSpansAreBoldAndEscaped) {
  EXPECT_EQ(markup("run `keyshim init` now"), "run \\fBkeyshim init\\fR now");
  EXPECT_EQ(markup("`-c`"), "\\fB\\-c\\fR");
}

TEST(RoffMarkup, UnpairedBacktickIsKeptAsWritten) {
  EXPECT_EQ(markup("a `b"), "a `b");
}

TEST(RoffSentence, CapitalisesAndEndsWithAFullStopOnce) {
  EXPECT_EQ(sentence("pool file"), "Pool file.");
  EXPECT_EQ(sentence("Print help."), "Print help.");
  EXPECT_EQ(sentence("$HOME"), "$HOME.");
  EXPECT_EQ(sentence(""), "");
}

TEST(RoffPage, HeaderNamesTheGeneratorAndTheTitleEscaped) {
  Page page("KEYSHIM-POOL", 5, "keyshim 1.0", "File Formats", "generated");
  EXPECT_EQ(page.str(),
            ".\\\" generated\n.TH \"KEYSHIM\\-POOL\" 5 \"\" \"keyshim 1.0\" \"File Formats\"\n.nh\n.ad l\n");
}

TEST(RoffPage, ParagraphRightAfterAHeadingStartsNoEmptyParagraph) {
  Page page("X", 1, "x", "x", "g");
  page.section("NAME");
  page.paragraph("one");
  page.paragraph("two");
  std::string text = page.str();
  EXPECT_NE(text.find(".SH \"NAME\"\none\n.PP\ntwo\n"), std::string::npos) << text;
}

TEST(RoffPage, QuotesInAHeadingCannotEndItsArgument) {
  Page page("X", 1, "x", "x", "g");
  page.subsection("say \"hi\"");
  EXPECT_NE(page.str().find(".SS \"say \\(dqhi\\(dq\"\n"), std::string::npos) << page.str();
}

TEST(RoffPage, ExampleKeepsItsLinesWithDotsEscaped) {
  Page page("X", 1, "x", "x", "g");
  page.section("EXAMPLE");
  page.example("[server]\n.hidden = 1\n");
  EXPECT_NE(page.str().find(".EX\n[server]\n\\&.hidden = 1\n.EE\n"), std::string::npos) << page.str();
}

} // namespace
} // namespace keyshim::util::roff
