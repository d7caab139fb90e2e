#pragma once
// Asking a running keyshim for its captured exchanges (GET /captures and
// /captures/ID), for `log`, `show` and `capture save`. Every failure is a
// message that names the address and the fix.
#include "cli/local_json.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace keyshim::cli {

using CaptureAnswer = LocalAnswer;

// GET `path` (a /captures path) from `instance`, with its client_token.
CaptureAnswer fetch_captures(const InstanceAddress& instance, const std::string& path);

// The /captures path for a list after `after` (0: all), with filters.
std::string captures_path(std::uint64_t after, const std::string& pool, std::optional<int> status);

} // namespace keyshim::cli
