#pragma once
// The screens of `keyshim top`, as pure functions: the parsed /status
// answer, the terminal's size, what the user chose (sort, filter, selected
// key, detail view) and the time since the answer go in; lines of styled
// text come out. The terminal shell (top_screen) only paints them, so every
// frame can be tested without a terminal.
#include "cli/top_data.hpp"

#include <string>
#include <vector>

namespace keyshim::cli::top {

// What a piece of text means; look_of() says how a terminal shows it.
enum class Style { plain, title, heading, good, warn, bad, dim, alert, selected, bar };

struct Span {
  std::string text;
  Style style = Style::plain;
};
using Line = std::vector<Span>;

enum class SortOrder { pool, state, rate, errors };
// "pool", "state", "req/min", "errors".
const char* to_string(SortOrder order);

// What the user chose; changed only by handle_input (top_input.hpp).
struct Ui {
  SortOrder sort = SortOrder::pool;
  std::string filter; // label substring, any case; "" shows every key
  bool editing_filter = false;
  std::string selected; // a key's id; "" or a key no longer shown: the first shown
  bool detail = false;  // the selected key's whole entry instead of the table
};

// A key's recent requests: the instance's captures whose chain of attempts
// used it, as `keyshim log` prints them, newest first; or why none are shown.
struct Recent {
  std::string key_id; // the KeyRow::id they are of
  std::vector<std::string> lines;
  std::string note; // shown when `lines` is empty
};

struct FrameInput {
  const Snapshot* snapshot = nullptr; // nullptr before the first answer
  Millis age{0};                      // since that answer: countdowns move by it
  std::string offline;                // why the last refresh failed; "" when it answered
  Millis offline_for{0};              // since the last answer, while offline
  const Ui* ui = nullptr;
  int width = 80;
  int height = 24;                // lines available; the table scrolls to keep the selection in view
  bool interactive = true;        // false: one frame for a pipe (no key help, every line)
  const Recent* recent = nullptr; // the selected key's, for the detail view
};

// The frame: exactly `height` lines or fewer when interactive, every line
// when not; none wider than `width` columns (a UTF-8 character counts one).
std::vector<Line> render_frame(const FrameInput& input);

// The ids of the keys the table shows, in its order (sorted, filtered): what
// the arrow keys move through.
std::vector<std::string> shown_keys(const Snapshot& snapshot, const Ui& ui);

// The key the detail view shows: the one chosen while it is shown, else the
// first shown; null when no key is shown.
const KeyRow* selected_key(const Snapshot& snapshot, const Ui& ui);

// The line's text without styles.
std::string plain(const Line& line);

// How a terminal shows a style. Without colour (NO_COLOR, or a terminal
// that has none) only bold, dim and reverse remain.
enum class Colour { none, green, yellow, red, cyan };
struct Look {
  Colour colour = Colour::none;
  bool bold = false;
  bool dim = false;
  bool reverse = false;
};
Look look_of(Style style, bool colour);

} // namespace keyshim::cli::top
