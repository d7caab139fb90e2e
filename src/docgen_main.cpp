// keyshim_docgen OUTPUT_DIR: the man pages and shell completions, written at
// build time from the command line and the settings table (packaging/Docs.cmake).
#include "cli/docs/docgen.hpp"

int main(int argc, char** argv) {
  return keyshim::cli::docs::docgen_main(argc, argv);
}
