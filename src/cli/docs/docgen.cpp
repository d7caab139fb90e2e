#include "cli/docs/docgen.hpp"

#include "cli/commands.hpp"
#include "cli/docs/command_doc.hpp"
#include "cli/docs/completions.hpp"
#include "cli/docs/man_page.hpp"
#include "config/pool_manual.hpp"
#include "keyshim/version.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace keyshim::cli::docs {

std::vector<DocFile> doc_files() {
  Cli cli = make_cli();
  CommandDoc root = describe(*cli.app);
  return {
      {"keyshim.1", man_page_roff(root, k_version)}, {"keyshim-pool.5", config::pool_manual_roff(k_version)},
      {"keyshim.bash", bash_completion(root)},       {"_keyshim", zsh_completion(root)},
      {"keyshim.fish", fish_completion(root)},
  };
}

int docgen_main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: keyshim_docgen OUTPUT_DIR\n");
    return 2;
  }
  for (const DocFile& file : doc_files()) {
    std::string path = fmt::format("{}/{}", argv[1], file.name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << file.text;
    out.close();
    if (!out) {
      fmt::print(stderr, "keyshim_docgen: error: cannot write {}: {}\n", path, std::strerror(errno));
      return 1;
    }
  }
  return 0;
}

} // namespace keyshim::cli::docs
