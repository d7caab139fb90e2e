#pragma once
// Internal to cli/: the table screen of `keyshim top`, a block per pool.
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace keyshim::cli::top {

// The pool's keys the filter lets through, in the chosen order (ties keep
// the file's order).
std::vector<const KeyRow*> ordered(const PoolRow& pool, const Ui& ui);

// The table's lines, and the index of the selected key's line (0 when none).
struct Body {
  std::vector<Line> lines;
  std::size_t selected_line = 0;
};

// Every pool's block for a terminal `width` columns wide, the key `selected`
// (an id, "" for none) marked, countdowns moved on by `age`.
Body table(const Snapshot& snapshot, const Ui& ui, const std::string& selected, Millis age,
           std::size_t width);

} // namespace keyshim::cli::top
