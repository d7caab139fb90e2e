#pragma once
// What --help's footer and keyshim(1) both say about the program as a whole,
// written once.
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::cli {

struct HelpFact {
  std::string_view name; // "0", "KEYSHIM_CONFIG"
  std::string meaning;
};

// keyshim's exit codes (`keyshim run` passes its command's on instead).
const std::vector<HelpFact>& exit_codes();

// The environment variables keyshim reads (besides those key_env settings name).
const std::vector<HelpFact>& environment_variables();

// --help's footer: the exit codes and where the pool file is looked for.
std::string help_footer();

} // namespace keyshim::cli
