#pragma once
// Reading the pool file the way ssh and libpq read private keys: it must be a
// regular file owned by the user running keyshim with no group/other
// permission bits, in a directory that group/other cannot write.
#include <optional>
#include <string>

namespace keyshim::config {

struct FileRead {
  std::optional<std::string> text; // set when the file passed every check
  std::string problem;             // otherwise: why, and the command that fixes it
};

// Open `path` once, check that descriptor and the file's directory, read it (at most 1 MiB).
FileRead read_private_file(const std::string& path);

// Why a file with this mode and owner must not be used, or "". `shown_path` goes into the fix.
std::string file_permission_problem(const std::string& shown_path, unsigned mode, unsigned owner_uid,
                                    unsigned effective_uid);

// Why the directory holding `file_path` lets others replace it, or "" (also "" when it cannot be examined).
std::string directory_problem(const std::string& file_path);

} // namespace keyshim::config
