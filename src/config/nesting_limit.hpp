#pragma once
// A bound on how deeply a pool file nests, checked on the raw text before
// toml++ sees it. toml++ 3.3 recurses once per level of a dotted key or table
// header with no limit of its own, so a 50,000-part `[a.a.a...]` header
// overflows the stack; a pool file needs three levels at most.
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::config {

// Deeper than this is refused. Far above any pool file, far below a stack.
inline constexpr int k_max_nesting = 64;

struct NestingProblem {
  int line = 0; // 1-based, where the too-deep header, key or value starts
  int column = 0;
  std::string message; // "table header nests deeper than 64 levels; ..."
};

// The first place where table headers, dotted keys, arrays and inline tables
// together nest deeper than k_max_nesting, or nullopt. Strings and comments
// are skipped as TOML reads them; anything else it does not understand is
// left for toml++ to report. Linear in the text, no recursion.
std::optional<NestingProblem> find_deep_nesting(std::string_view text);

} // namespace keyshim::config
