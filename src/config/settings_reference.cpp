#include "config/settings_reference.hpp"

#include "config/settings_table.hpp"

#include <fmt/format.h>

namespace keyshim::config {
namespace {

// Pipes would end a Markdown table cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

std::string settings_reference_markdown() {
  std::string out;
  for (Section section : {Section::server, Section::upstream, Section::key}) {
    out += section == Section::key        ? "\n`[[keys]]` and `[[pools.NAME.keys]]` (one per key)\n\n"
           : section == Section::upstream ? "\n`[upstream]` (the default pool) and each `[pools.NAME]`\n\n"
                                          : fmt::format("\n`[{}]`\n\n", to_string(section));
    out += "| setting | default | on reload | meaning |\n|---|---|---|---|\n";
    for (const Setting& s : settings_table()) {
      if (s.section != section) {
        continue;
      }
      out += fmt::format("| `{}` | {} | {} | {} |\n", s.name,
                         s.default_text.empty() ? "—" : fmt::format("`{}`", cell(s.default_text)),
                         s.reloadable ? "applies" : "restart", cell(s.doc));
    }
  }
  return out;
}

} // namespace keyshim::config
