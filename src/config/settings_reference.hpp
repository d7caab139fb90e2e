#pragma once
// The pool-file reference, rendered from the settings table so that the
// README, keyshim-pool(5) and the parser cannot drift apart (a test compares
// the README's copy).
#include "config/settings_table.hpp"
#include "util/roff.hpp"

#include <string>

namespace keyshim::config {

// A Markdown table per section: setting, default, reload, meaning.
std::string settings_reference_markdown();

// What a value of `setting` looks like, with its bounds: "duration, from 1ms to 1d".
std::string setting_type_text(const Setting& setting);

// The same reference for a man page: a subsection per section, a tagged
// paragraph per setting with its meaning, type, default and reload behaviour.
void settings_reference_roff(util::roff::Page& page);

} // namespace keyshim::config
