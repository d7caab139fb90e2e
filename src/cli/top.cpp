// keyshim top: a live view of a running instance, its /status answer
// redrawn every second on the terminal (top_screen), or one frame for a
// pipe, as `keyshim status` prints its table.
#include "cli/commands.hpp"
#include "cli/top_recent.hpp"
#include "cli/top_session.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace keyshim::cli {
namespace {

using namespace top;

struct TopFlags {
  std::string config;
  std::string listen;
};

// The width of a frame printed to a pipe: $COLUMNS when the shell exported
// it, else 80.
int pipe_width() {
  const char* columns = std::getenv("COLUMNS");
  char* end = nullptr;
  long width = columns ? std::strtol(columns, &end, 10) : 0;
  return columns && *end == '\0' && width >= 20 && width <= 1000 ? static_cast<int>(width) : 80;
}

void print_frame(const Session& session, MonoTime now) {
  for (const Line& line : session.frame(now, pipe_width(), std::numeric_limits<int>::max(), false)) {
    std::string text = plain(line);
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    fmt::print("{}\n", text);
  }
}

int run_top(const TopFlags& flags) {
  Session session(locate_instance(flags.config, flags.listen));
  // No instance at the start is an error, as for status; one that stops
  // answering later is shown on the screen until it answers again.
  if (!session.refresh(std::chrono::steady_clock::now())) {
    throw std::runtime_error(session.offline());
  }
  bool terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  if (!terminal || !run_screen(session)) {
    print_frame(session, std::chrono::steady_clock::now());
  }
  return 0;
}

} // namespace

namespace top {

bool Session::refresh(MonoTime now) {
  StatusAnswer answer = fetch_status(m_instance);
  if (!answer.ok()) {
    m_offline = answer.error;
    return false;
  }
  Snapshot snapshot = read_snapshot(*answer.json);
  m_rates.observe(snapshot, now);
  m_snapshot = std::move(snapshot);
  m_fetched = now;
  m_offline.clear();
  ask_recent();
  return true;
}

// The detail view's recent requests, asked with every refresh while it
// shows, and at once when it opens or another key is chosen.
void Session::ask_recent() {
  const KeyRow* key = m_ui.detail && m_snapshot ? selected_key(*m_snapshot, m_ui) : nullptr;
  m_recent = key != nullptr ? fetch_recent(m_instance, *key) : Recent{};
}

std::vector<Line> Session::frame(MonoTime now, int width, int height, bool interactive) const {
  FrameInput input;
  input.snapshot = m_snapshot ? &*m_snapshot : nullptr;
  input.age = std::chrono::duration_cast<Millis>(now - m_fetched);
  input.offline = m_offline;
  input.offline_for = input.age;
  input.ui = &m_ui;
  input.width = width;
  input.height = height;
  input.interactive = interactive;
  input.recent = &m_recent;
  return render_frame(input);
}

bool Session::press(const Input& input) {
  const bool quit =
      handle_input(m_ui, input, m_snapshot ? shown_keys(*m_snapshot, m_ui) : std::vector<std::string>{});
  const KeyRow* key = m_ui.detail && m_snapshot ? selected_key(*m_snapshot, m_ui) : nullptr;
  if (!quit && key != nullptr && key->id != m_recent.key_id) {
    ask_recent();
  }
  return quit;
}

} // namespace top

Subcommand add_top(CLI::App& parent) {
  auto flags = std::make_shared<TopFlags>();
  CLI::App* app = parent.add_subcommand(
      "top", "a live view of the running keyshim, refreshed every second: each pool's queue and each "
             "key's state, cooldown, requests in flight, requests per minute, tokens today and last "
             "error. Keys: q quits, s sorts, / filters by label, arrows and Enter show a key, Esc goes "
             "back. Without a terminal it prints one frame. Exit 0 when quit, 1 when no keyshim answered");
  add_config_option(*app, flags->config);
  app->add_option("--listen", flags->listen,
                  "ADDR:PORT of the instance to watch (default: the pool file's [server] listen, else " +
                      std::string(k_default_listen) + ")")
      ->type_name("ADDR:PORT");
  return {app, [flags] { return run_top(*flags); }};
}

} // namespace keyshim::cli
