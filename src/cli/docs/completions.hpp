#pragma once
// Shell completions for keyshim, written from the command line itself
// (keyshim_docgen runs them at build time). Each offers the subcommands,
// every command's options, the values of options that allow a fixed set,
// file names for FILE options, and command names after `keyshim run --`.
#include "cli/docs/command_doc.hpp"

#include <string>
#include <string_view>

namespace keyshim::cli::docs {

// For bash-completion: share/bash-completion/completions/keyshim. Defines
// _keyshim and registers it with `complete -F`.
std::string bash_completion(const CommandDoc& root);

// For zsh's fpath: share/zsh/vendor-completions/_keyshim (#compdef keyshim).
std::string zsh_completion(const CommandDoc& root);

// For fish: share/fish/vendor_completions.d/keyshim.fish.
std::string fish_completion(const CommandDoc& root);

// `text` in POSIX single quotes (bash, zsh): 'it'\''s'.
std::string sh_quote(std::string_view text);

// The first sentence-like part of a description, for shells that show one
// line per candidate: up to the first ';' or " (", at most 80 characters.
std::string short_description(std::string_view description);

} // namespace keyshim::cli::docs
