#pragma once
// What a key press does to `keyshim top`, without a terminal: q quits, s
// cycles the sort, / edits the label filter (Enter keeps it, Esc clears it),
// the arrows (or j and k) choose a key, Enter shows it whole, Esc goes back.
#include "cli/top_frame.hpp"

#include <string>
#include <vector>

namespace keyshim::cli::top {

enum class Press { character, enter, escape, backspace, up, down, page_up, page_down, home, end };

struct Input {
  Press press = Press::character;
  char character = 0; // for Press::character: a byte of what was typed
};

// Applies `input` to `ui`. `shown` is what the table shows now, in its
// order (shown_keys). True when top should quit.
bool handle_input(Ui& ui, const Input& input, const std::vector<std::string>& shown);

} // namespace keyshim::cli::top
