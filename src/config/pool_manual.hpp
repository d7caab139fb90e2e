#pragma once
// keyshim-pool(5): the pool file's man page, its settings rendered from the
// settings table (keyshim_docgen writes it at build time).
#include <string>
#include <string_view>

namespace keyshim::config {

// The whole page, in roff; `version` goes into its header.
std::string pool_manual_roff(std::string_view version);

// The example pool file the page shows (a test loads it).
std::string_view pool_manual_example();

} // namespace keyshim::config
