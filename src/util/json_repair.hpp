#pragma once
// The second chance util::parse_json gives a document that nlohmann-json
// refused for a spot that should not cost the whole document: a number beyond
// a double's range, a lone UTF-16 surrogate escape, invalid UTF-8 in a string.
// Internal to util/json_read.cpp.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::util::detail {

struct RepairedJson {
  struct Clamp {
    std::size_t ordinal = 0; // which number of the document, counting from 0 in document order
    bool negative = false;
  };
  struct Shift {
    std::size_t end = 0;       // offset in `text` just after a string whose length changed
    std::ptrdiff_t growth = 0; // bytes `text` has gained over the original up to there
  };

  std::string text;          // the document with every such spot rewritten
  std::vector<Clamp> clamps; // numbers too large for a double, now written as 0 (and spaces)
  std::vector<Shift> shifts; // where replacing invalid UTF-8 changed the length
  bool changed = false;

  // The offset in the original text that `offset` in `text` corresponds to.
  std::size_t original_offset(std::size_t offset, std::size_t original_size) const;
};

// Rewrite, in one pass that skips strings as JSON does: overflowing numbers
// (to be read as the largest double of their sign), lone surrogate escapes
// (as \ufffd) and invalid UTF-8 inside strings (as U+FFFD).
RepairedJson repair_json(std::string_view text);

// The offset of the bracket that opens the (max_depth + 1)th nested array or
// object, or text.size() when there is none.
std::size_t too_deep_at(std::string_view text, std::size_t max_depth);

} // namespace keyshim::util::detail
