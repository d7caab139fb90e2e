#pragma once
// keyshim(1), written from the command line itself (keyshim_docgen runs it at
// build time).
#include "cli/docs/command_doc.hpp"

#include <string>
#include <string_view>

namespace keyshim::cli::docs {

// The whole page, in roff; `version` goes into its header.
std::string man_page_roff(const CommandDoc& root, std::string_view version);

} // namespace keyshim::cli::docs
