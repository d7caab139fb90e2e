#include "terminal_screen.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <tuple>

extern char** environ;

namespace keyshim::test {
namespace {

// The numbers of a CSI sequence ("7;56" -> {7, 56}); `fallback` for an
// empty or missing one.
int param(const std::string& params, std::size_t index, int fallback) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    start = params.find(';', start);
    if (start == std::string::npos) {
      return fallback;
    }
    ++start;
  }
  std::size_t end = params.find(';', start);
  std::string text = params.substr(start, end == std::string::npos ? std::string::npos : end - start);
  return text.empty() ? fallback : std::atoi(text.c_str());
}

// Bytes a UTF-8 sequence starting with `lead` has.
std::size_t utf8_length(unsigned char lead) {
  return lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}

} // namespace

TerminalScreen::TerminalScreen(int rows, int columns)
    : m_rows(rows), m_columns(columns),
      m_cells(static_cast<std::size_t>(rows),
              std::vector<std::string>(static_cast<std::size_t>(columns), " ")),
      m_bottom(rows - 1) {
}

void TerminalScreen::resize(int rows, int columns) {
  m_cells.resize(static_cast<std::size_t>(rows));
  for (auto& row : m_cells) {
    row.resize(static_cast<std::size_t>(columns), " ");
  }
  m_rows = rows;
  m_columns = columns;
  m_top = 0;
  m_bottom = rows - 1;
  m_y = std::min(m_y, rows - 1);
  m_x = std::min(m_x, columns - 1);
}

// A byte at a time: C0 controls, ESC sequences (CSI with their parameters
// and final byte; the two-byte ones), and UTF-8 characters.
void TerminalScreen::feed(const std::string& bytes) {
  for (char c : bytes) {
    m_pending += c;
    const std::string& p = m_pending;
    if (p[0] == '\033') {
      if (p.size() == 1) {
        continue;
      }
      if (p[1] == '[') {
        auto last = static_cast<unsigned char>(p.back());
        if (p.size() == 2 || last < 0x40 || last > 0x7e) {
          continue; // parameters still coming
        }
        csi(p.back(), p.substr(2, p.size() - 3));
      } else if (p[1] == '(' || p[1] == ')') {
        if (p.size() < 3) {
          continue; // a character set: ignored
        }
      } else if (p[1] == '7') {
        m_saved = {m_y, m_x};
      } else if (p[1] == '8') {
        std::tie(m_y, m_x) = m_saved;
      } else if (p[1] == 'M') { // reverse index
        if (m_y == m_top) {
          scroll_down(m_top, m_bottom, 1);
        } else {
          m_y = std::max(0, m_y - 1);
        }
      } else if (p[1] == 'D' || p[1] == 'E') {
        line_feed();
        m_x = p[1] == 'E' ? 0 : m_x;
      } // ESC = and ESC > (keypad modes) and the rest: ignored
      m_pending.clear();
      continue;
    }
    auto lead = static_cast<unsigned char>(p[0]);
    if (lead >= 0x80 && p.size() < utf8_length(lead)) {
      continue;
    }
    if (lead == '\r') {
      m_x = 0;
    } else if (lead == '\n' || lead == '\v' || lead == '\f') {
      line_feed();
    } else if (lead == '\b') {
      m_x = std::max(0, m_x - 1);
    } else if (lead == '\t') {
      m_x = std::min(m_columns - 1, (m_x / 8 + 1) * 8);
    } else if (lead >= 0x20) {
      print(p);
    }
    m_pending.clear();
  }
}

void TerminalScreen::csi(char final, const std::string& params) {
  if (!params.empty() && (params[0] == '?' || params[0] == '>' || params[0] == '=')) {
    return; // private modes (cursor visibility, alternate screen...): nothing drawn
  }
  if (!move_cursor(final, params)) {
    edit(final, params); // m (attributes), h/l (modes), t (window ops) and the rest draw nothing
  }
}

// CUP, VPA, CHA and the relative moves; false for any other sequence.
bool TerminalScreen::move_cursor(char final, const std::string& params) {
  int n = std::max(1, param(params, 0, 1));
  switch (final) {
  case 'H':
  case 'f':
    m_y = std::clamp(param(params, 0, 1) - 1, 0, m_rows - 1);
    m_x = std::clamp(param(params, 1, 1) - 1, 0, m_columns - 1);
    return true;
  case 'd':
    m_y = std::clamp(n - 1, 0, m_rows - 1);
    return true;
  case 'G':
  case '`':
    m_x = std::clamp(n - 1, 0, m_columns - 1);
    return true;
  case 'A':
    m_y = std::max(0, m_y - n);
    return true;
  case 'B':
    m_y = std::min(m_rows - 1, m_y + n);
    return true;
  case 'C':
    m_x = std::min(m_columns - 1, m_x + n);
    return true;
  case 'D':
    m_x = std::max(0, m_x - n);
    return true;
  case 'r': // the scrolling region; the cursor goes home
    m_top = std::clamp(param(params, 0, 1) - 1, 0, m_rows - 1);
    m_bottom = std::clamp(param(params, 1, m_rows) - 1, m_top, m_rows - 1);
    m_y = 0;
    m_x = 0;
    return true;
  default:
    return false;
  }
}

// Erasing, repeating, inserting and deleting characters and lines, scrolling.
void TerminalScreen::edit(char final, const std::string& params) {
  int n = std::max(1, param(params, 0, 1));
  int mode = param(params, 0, 0);
  switch (final) {
  case 'K':
    erase_line(m_y, mode == 0 ? m_x : 0, mode == 1 ? m_x + 1 : m_columns);
    break;
  case 'J':
    erase_line(m_y, mode == 0 ? m_x : 0, mode == 1 ? m_x + 1 : m_columns);
    for (int y = mode == 0 ? m_y + 1 : 0; y < (mode == 1 ? m_y : m_rows); ++y) {
      erase_line(y, 0, m_columns);
    }
    break;
  case 'X':
    erase_line(m_y, m_x, std::min(m_columns, m_x + n));
    break;
  case 'b': // repeat the character before the cursor
    for (int i = 0; i < n && m_x > 0; ++i) {
      print(std::string(m_cells[static_cast<std::size_t>(m_y)][static_cast<std::size_t>(m_x - 1)]));
    }
    break;
  case '@':
  case 'P':
    shift_characters(final == '@' ? n : -n);
    break;
  case 'L':
    scroll_down(m_y, m_bottom, n);
    break;
  case 'M':
    scroll_up(m_y, m_bottom, n);
    break;
  case 'S':
    scroll_up(m_top, m_bottom, n);
    break;
  case 'T':
    scroll_down(m_top, m_bottom, n);
    break;
  default:
    break;
  }
}

// ICH (count > 0) inserts blanks at the cursor, DCH (count < 0) deletes.
void TerminalScreen::shift_characters(int count) {
  auto& row = m_cells[static_cast<std::size_t>(m_y)];
  auto at = row.begin() + m_x;
  int n = std::min(std::abs(count), m_columns - m_x);
  if (count > 0) {
    row.insert(at, static_cast<std::size_t>(n), " ");
  } else {
    row.erase(at, at + n);
  }
  row.resize(static_cast<std::size_t>(m_columns), " ");
}

void TerminalScreen::print(const std::string& character) {
  if (m_x >= m_columns) { // the last column was written: wrap now (xterm's auto-margin)
    m_x = 0;
    line_feed();
  }
  m_cells[static_cast<std::size_t>(m_y)][static_cast<std::size_t>(m_x)] = character;
  ++m_x;
}

void TerminalScreen::line_feed() {
  if (m_y == m_bottom) {
    scroll_up(m_top, m_bottom, 1);
  } else {
    m_y = std::min(m_rows - 1, m_y + 1);
  }
}

void TerminalScreen::scroll_up(int top, int bottom, int count) {
  for (int i = 0; i < count; ++i) {
    m_cells.erase(m_cells.begin() + top);
    m_cells.insert(m_cells.begin() + bottom,
                   std::vector<std::string>(static_cast<std::size_t>(m_columns), " "));
  }
}

void TerminalScreen::scroll_down(int top, int bottom, int count) {
  for (int i = 0; i < count; ++i) {
    m_cells.erase(m_cells.begin() + bottom);
    m_cells.insert(m_cells.begin() + top, std::vector<std::string>(static_cast<std::size_t>(m_columns), " "));
  }
}

void TerminalScreen::erase_line(int y, int from, int to) {
  auto& row = m_cells[static_cast<std::size_t>(y)];
  for (int x = std::max(0, from); x < std::min(to, m_columns); ++x) {
    row[static_cast<std::size_t>(x)].assign(1, ' ');
  }
}

std::string TerminalScreen::row(int y) const {
  std::string text;
  for (const std::string& cell : m_cells.at(static_cast<std::size_t>(y))) {
    text += cell;
  }
  return text.substr(0, text.find_last_not_of(' ') + 1);
}

std::string TerminalScreen::text() const {
  std::string text;
  for (int y = 0; y < m_rows; ++y) {
    text += row(y) + "\n";
  }
  return text;
}

std::string TerminalScreen::row_with(const std::vector<std::string>& needles) const {
  for (int y = 0; y < m_rows; ++y) {
    std::string text = row(y);
    if (std::all_of(needles.begin(), needles.end(),
                    [&](const std::string& needle) { return text.find(needle) != std::string::npos; })) {
      return text;
    }
  }
  return "";
}

PtyProgram::PtyProgram(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env, int rows, int columns)
    : m_screen(rows, columns) {
  winsize size{};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(columns);
  // Everything the child needs is made here: after a fork in a program with
  // threads, only async-signal-safe calls are safe (no setenv, no malloc).
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string variable(*entry);
    std::string name = variable.substr(0, variable.find('='));
    auto overridden = std::find_if(env.begin(), env.end(), [&](const auto& e) { return e.first == name; });
    if (overridden == env.end()) {
      variables.push_back(std::move(variable));
    }
  }
  for (const auto& [name, value] : env) {
    if (!value.empty()) {
      variables.push_back(name + "=" + value); // an empty value removes the variable
    }
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& variable : variables) {
    envp.push_back(variable.data());
  }
  envp.push_back(nullptr);
  m_pid = forkpty(&m_master, nullptr, nullptr, &size);
  if (m_pid < 0) {
    throw std::runtime_error("forkpty failed");
  }
  if (m_pid == 0) {
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  fcntl(m_master, F_SETFL, fcntl(m_master, F_GETFL) | O_NONBLOCK);
}

PtyProgram::~PtyProgram() {
  if (!m_exited && m_pid > 0) {
    kill(m_pid, SIGKILL);
    waitpid(m_pid, nullptr, 0);
  }
  if (m_master >= 0) {
    close(m_master);
  }
}

void PtyProgram::read_some(std::chrono::milliseconds timeout) {
  pollfd watch{m_master, POLLIN, 0};
  if (poll(&watch, 1, static_cast<int>(timeout.count())) <= 0) {
    return;
  }
  char buffer[65536];
  ssize_t got = read(m_master, buffer, sizeof buffer);
  if (got > 0) {
    std::string bytes(buffer, static_cast<std::size_t>(got));
    m_output += bytes;
    m_screen.feed(bytes);
  } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
    std::this_thread::sleep_for(timeout); // the program closed its side (EIO): nothing more comes
  }
}

bool PtyProgram::wait_for(const std::function<bool(const TerminalScreen&)>& done,
                          std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(m_screen)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    read_some(std::chrono::milliseconds(50));
  }
  return true;
}

void PtyProgram::type(const std::string& keys) {
  if (write(m_master, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size())) {
    throw std::runtime_error("could not type into the pseudo-terminal");
  }
}

void PtyProgram::resize(int rows, int columns) {
  winsize size{};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(columns);
  ioctl(m_master, TIOCSWINSZ, &size); // the kernel sends SIGWINCH to the foreground group
  m_screen.resize(rows, columns);
}

int PtyProgram::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t done = waitpid(m_pid, &status, WNOHANG);
    if (done == m_pid) {
      m_exited = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    read_some(std::chrono::milliseconds(50)); // keep draining: a full pty would block its last writes
  }
  return -1;
}

} // namespace keyshim::test
