#pragma once
// Internal to cli/: one run of `keyshim top`, what it knows between frames:
// where the instance is, its last answer, the request rates measured so
// far, what the user chose, and why the last refresh failed.
#include "cli/status_table.hpp"
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"
#include "cli/top_input.hpp"

#include <optional>
#include <string>
#include <vector>

namespace keyshim::cli::top {

class Session {
public:
  explicit Session(InstanceAddress instance) : m_instance(std::move(instance)) {}

  // GET /status now. False when the instance did not answer; the last
  // answer stays, and the frame says why it is old.
  bool refresh(MonoTime now);
  // Why the last refresh failed, "" when it answered.
  const std::string& offline() const { return m_offline; }

  // The frame for a terminal of `width` x `height` at `now`.
  std::vector<Line> frame(MonoTime now, int width, int height, bool interactive) const;
  // Applies a key press; true when top should quit.
  bool press(const Input& input);

private:
  InstanceAddress m_instance;
  std::optional<Snapshot> m_snapshot;
  MonoTime m_fetched{};
  RateMeter m_rates;
  Ui m_ui;
  std::string m_offline;
  Recent m_recent; // the selected key's, asked while the detail view shows it

  void ask_recent();
};

// Runs `session` full-screen on the terminal of stdin and stdout until q is
// pressed, refreshing every second and redrawing on every key and resize.
// False when the terminal cannot be used (an unknown TERM): nothing was drawn.
bool run_screen(Session& session);

} // namespace keyshim::cli::top
