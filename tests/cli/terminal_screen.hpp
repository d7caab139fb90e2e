#pragma once
// A program on a pseudo-terminal, and the screen it draws there: the bytes
// it writes are played on a grid of cells the way an xterm would (cursor
// moves, erases, scrolling regions; attributes are dropped), so a test reads
// the frames of a full-screen program as rows of text.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::test {

// Rows of text, as much of xterm as ncurses uses with TERM=xterm.
class TerminalScreen {
public:
  TerminalScreen(int rows, int columns);

  // Play `bytes` written by the program (UTF-8 characters take one cell).
  void feed(const std::string& bytes);
  // A resized terminal keeps what fits.
  void resize(int rows, int columns);

  std::string row(int y) const; // without trailing spaces
  int rows() const { return m_rows; }
  // Every row joined by newlines, for failure messages.
  std::string text() const;
  // The first row containing every one of `needles`, or "" when none does.
  std::string row_with(const std::vector<std::string>& needles) const;

private:
  void csi(char final, const std::string& params);
  bool move_cursor(char final, const std::string& params);
  void edit(char final, const std::string& params);
  void shift_characters(int count);
  void print(const std::string& character);
  void line_feed();
  void scroll_up(int top, int bottom, int count);
  void scroll_down(int top, int bottom, int count);
  void erase_line(int y, int from, int to);

  int m_rows;
  int m_columns;
  std::vector<std::vector<std::string>> m_cells; // one UTF-8 character a cell
  int m_y = 0;
  int m_x = 0;
  int m_top = 0; // the scrolling region, rows [m_top, m_bottom]
  int m_bottom;
  std::pair<int, int> m_saved{0, 0};
  std::string m_pending; // an escape sequence or character not complete yet
};

// A program started on the slave side of a pseudo-terminal of a given size,
// its output played on a TerminalScreen. Killed (SIGKILL) when destroyed
// while still running.
class PtyProgram {
public:
  // `argv[0]` is a path; `env` sets variables over the test's own (an empty
  // value removes one).
  PtyProgram(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& env, int rows, int columns);
  ~PtyProgram();
  PtyProgram(const PtyProgram&) = delete;
  PtyProgram& operator=(const PtyProgram&) = delete;

  // Read what it wrote until `done(screen)` holds or `timeout` passes. True
  // when it held.
  bool wait_for(const std::function<bool(const TerminalScreen&)>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Type `keys`.
  void type(const std::string& keys);
  // Resize the terminal, as a window manager does (SIGWINCH follows).
  void resize(int rows, int columns);
  // Wait up to `timeout` for it to exit; its exit code, -1 when it was
  // killed by a signal or did not exit in time.
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  const TerminalScreen& screen() const { return m_screen; }
  // Every byte it wrote so far.
  const std::string& output() const { return m_output; }

private:
  void read_some(std::chrono::milliseconds timeout);

  pid_t m_pid = -1;
  int m_master = -1;
  bool m_exited = false;
  TerminalScreen m_screen;
  std::string m_output;
};

} // namespace keyshim::test
