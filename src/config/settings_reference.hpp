#pragma once
// The README's pool-file reference, rendered from the settings table so the
// two cannot drift apart (a test compares them).
#include <string>

namespace keyshim::config {

// A Markdown table per section: setting, default, reload, meaning.
std::string settings_reference_markdown();

} // namespace keyshim::config
