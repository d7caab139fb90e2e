#pragma once
// keyshim_docgen: the build step that writes the man pages and the shell
// completions (packaging/Docs.cmake runs it; the files are installed from
// the build directory).
#include <string>
#include <vector>

namespace keyshim::cli::docs {

struct DocFile {
  std::string name; // in the output directory: "keyshim.1", "_keyshim"
  std::string text;
};

// keyshim(1), keyshim-pool(5) and the bash, zsh and fish completions.
std::vector<DocFile> doc_files();

// `keyshim_docgen OUTPUT_DIR`: writes doc_files() there. 0 ok, 1 when a file
// cannot be written, 2 usage.
int docgen_main(int argc, char** argv);

} // namespace keyshim::cli::docs
