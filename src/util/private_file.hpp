#pragma once
// A small file only its owner may read, written whole or not at all: the
// state file that keeps key health across restarts. Never holds key bytes,
// but what it says about keys is still the user's business.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::util {

// Write `text` to `path` atomically: a temporary file beside it (mode 0600),
// flushed to disk, then renamed over `path`. Missing parent directories are
// made with mode 0700. False with `error` ("cannot create /x/y: Permission
// denied") when any step fails; `path` is then as it was.
bool write_private_file(const std::string& path, std::string_view text, std::string& error);

// The text of `path`, when it is a regular file of at most `max_bytes` owned
// by this user and not writable by group or others. nullopt with `error` set
// otherwise, and with `error` empty when the file does not exist.
std::optional<std::string> read_private_file(const std::string& path, std::size_t max_bytes,
                                             std::string& error);

} // namespace keyshim::util
