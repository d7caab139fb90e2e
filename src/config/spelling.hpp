#pragma once
// "did you mean" for misspelt setting names.
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::config {

// The candidate closest to `word` by edit distance when it is close enough to
// be a typo (at most 2 edits, and fewer than half the word), else "".
std::string closest_spelling(std::string_view word, const std::vector<std::string_view>& candidates);

} // namespace keyshim::config
