#pragma once
// Pool file -> Config. Reads the file once through a descriptor that has
// passed the permission check, validates everything, and reports every
// problem of the file at once.
#include "config/config.hpp"

#include <optional>
#include <string>
#include <vector>

namespace keyshim::config {

struct Problem {
  std::string file; // path as given
  int line = 0;     // 0 when the problem has no position
  int column = 0;
  std::string message;

  // "FILE:LINE:COL: message" or "FILE: message".
  std::string text() const;
};

struct LoadResult {
  std::optional<Config> config; // set only when there are no problems
  std::vector<Problem> problems;

  bool ok() const { return config.has_value(); }
  // All problems, one per line.
  std::string problems_text() const;
};

// Whether key_env/key_cmd are resolved. Commands that only need the file's
// settings (env, status, reload) skip them: `eval "$(keyshim env)"` in a
// shell profile must not run `pass` or prompt for a passphrase.
enum class SecretResolution { resolve, skip };

// Permission check, parse, validate, resolve key/key_env/key_cmd.
LoadResult load_pool_file(const std::string& path, SecretResolution secrets = SecretResolution::resolve);

// Same, from text already in memory (tests, the demo's built-in pool). No
// permission check; `path` is only used in messages.
LoadResult load_pool_text(const std::string& text, const std::string& path,
                          SecretResolution secrets = SecretResolution::resolve);

} // namespace keyshim::config
