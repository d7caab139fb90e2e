// The terminal side of `keyshim top`, on ncurses (Debian 12's libncursesw6):
// it paints the frames top_frame renders, turns key presses into Inputs,
// and waits for whichever comes first, a key or the next refresh. ncurses
// redraws only the cells that changed, follows resizes (KEY_RESIZE) and puts
// the terminal back on exit and on SIGINT/SIGTERM. The only file that
// includes it.
#include "cli/top_session.hpp"

#include <langinfo.h>

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <optional>

// Built with NCURSES_NOMACROS (cmake/Dependencies.cmake): move() and
// erase() are functions, not macros that would rewrite std::move.
#include <curses.h>

namespace keyshim::cli::top {
namespace {

using namespace std::chrono;

constexpr milliseconds k_refresh{1000};

// https://no-color.org: any value but the empty one turns colours off.
bool wants_colour() {
  const char* no_colour = std::getenv("NO_COLOR");
  return (no_colour == nullptr || *no_colour == '\0') && has_colors();
}

short pair_of(Colour colour) {
  return static_cast<short>(colour); // init_colours() numbers the pairs so
}

void init_colours() {
  start_color();
  use_default_colors();
  init_pair(pair_of(Colour::green), COLOR_GREEN, -1);
  init_pair(pair_of(Colour::yellow), COLOR_YELLOW, -1);
  init_pair(pair_of(Colour::red), COLOR_RED, -1);
  init_pair(pair_of(Colour::cyan), COLOR_CYAN, -1);
}

attr_t attributes(Style style, bool colour) {
  Look look = look_of(style, colour);
  attr_t attr = A_NORMAL;
  attr |= look.bold ? A_BOLD : A_NORMAL;
  attr |= look.dim ? A_DIM : A_NORMAL;
  attr |= look.reverse ? A_REVERSE : A_NORMAL;
  if (look.colour != Colour::none) {
    attr |= static_cast<attr_t>(COLOR_PAIR(pair_of(look.colour)));
  }
  return attr;
}

// Outside a UTF-8 locale a byte above 0x7f is no character the terminal
// would show as one: it becomes '?'.
std::string for_terminal(std::string text, bool utf8) {
  if (!utf8) {
    std::replace_if(
        text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }, '?');
  }
  return text;
}

void paint(const std::vector<Line>& lines, bool colour, bool utf8) {
  ::erase();
  for (std::size_t y = 0; y < lines.size() && static_cast<int>(y) < LINES; ++y) {
    ::move(static_cast<int>(y), 0);
    for (const Span& span : lines[y]) {
      attrset(attributes(span.style, colour));
      addstr(for_terminal(span.text, utf8).c_str()); // the bottom-right cell returns ERR, harmlessly
    }
  }
  attrset(A_NORMAL);
  ::refresh();
}

std::optional<Input> input_of(int ch) {
  switch (ch) {
  case 27:
    return Input{Press::escape};
  case KEY_ENTER:
  case '\n':
  case '\r':
    return Input{Press::enter};
  case KEY_BACKSPACE:
  case 127:
  case 8:
    return Input{Press::backspace};
  case KEY_UP:
    return Input{Press::up};
  case KEY_DOWN:
    return Input{Press::down};
  case KEY_PPAGE:
    return Input{Press::page_up};
  case KEY_NPAGE:
    return Input{Press::page_down};
  case KEY_HOME:
    return Input{Press::home};
  case KEY_END:
    return Input{Press::end};
  default:
    break;
  }
  if (ch >= 0 && ch <= 0xff) {
    return Input{Press::character, static_cast<char>(ch)};
  }
  return std::nullopt; // KEY_RESIZE and keys top has no use for: a redraw
}

// Until q: paint, wait for a key or the next refresh, apply it.
void run(Session& session, bool colour, bool utf8) {
  auto next_refresh = steady_clock::now() + k_refresh;
  for (;;) {
    paint(session.frame(steady_clock::now(), COLS, LINES, true), colour, utf8);
    auto wait = duration_cast<milliseconds>(next_refresh - steady_clock::now());
    ::timeout(static_cast<int>(std::clamp(wait, milliseconds(0), k_refresh).count()));
    int ch = getch();
    if (ch != ERR) {
      std::optional<Input> input = input_of(ch);
      if (input && session.press(*input)) {
        return;
      }
    }
    if (steady_clock::now() >= next_refresh) {
      session.refresh(steady_clock::now());
      next_refresh = steady_clock::now() + k_refresh;
    }
  }
}

} // namespace

bool run_screen(Session& session) {
  std::setlocale(LC_ALL, "");
  bool utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    return false;
  }
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25); // Esc alone means back; waiting for the rest of a sequence would lag
  bool colour = wants_colour();
  if (colour) {
    init_colours();
  }
  run(session, colour, utf8);
  endwin();
  delscreen(screen);
  return true;
}

} // namespace keyshim::cli::top
