// The screens of `keyshim top` put together: a heading with the instance
// and its totals, the table (top_table) or one key's detail (top_detail),
// and a footer with the keys to press.
#include "cli/top_frame.hpp"

#include "cli/top_detail.hpp"
#include "cli/top_table.hpp"
#include "cli/top_text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::cli::top {
namespace {

// The selected key: the one the user chose while it is shown, else the first.
std::string selected_id(const Snapshot& snapshot, const Ui& ui) {
  std::vector<std::string> ids = shown_keys(snapshot, ui);
  if (std::find(ids.begin(), ids.end(), ui.selected) != ids.end() || ids.empty()) {
    return ids.empty() ? "" : ui.selected;
  }
  return ids.front();
}

std::vector<Line> totals(const Snapshot& s, std::size_t width) {
  long long in_flight = 0;
  long long waiting = 0;
  std::optional<double> per_minute;
  std::uint64_t tokens = 0;
  for (const PoolRow& pool : s.pools) {
    waiting += pool.waiting.value_or(0);
    for (const KeyRow& key : pool.keys) {
      in_flight += key.in_flight;
      if (key.per_minute) {
        per_minute = per_minute.value_or(0) + *key.per_minute;
      }
      tokens += key.today.input_tokens + key.today.output_tokens;
    }
  }
  const Counts& t = s.totals;
  Line keys = {{fmt::format("keys {}: {} available, ", t.total, t.available), Style::plain},
               {fmt::format("{} cooling", t.cooling), t.cooling > 0 ? Style::warn : Style::plain},
               {", ", Style::plain},
               {fmt::format("{} disabled", t.disabled), t.disabled > 0 ? Style::bad : Style::plain}};
  return flow({keys,
               {{fmt::format("in flight {}", in_flight), Style::plain}},
               {{fmt::format("waiting {}", waiting), waiting > 0 ? Style::warn : Style::plain}},
               {{rate_text(per_minute) + " req/min", Style::plain}},
               {{compact(tokens) + " tokens today", Style::plain}}},
              width);
}

// The heading: the instance, the totals, and what went wrong.
std::vector<Line> heading(const FrameInput& input) {
  auto width = static_cast<std::size_t>(input.width);
  std::vector<Line> lines;
  const Snapshot* s = input.snapshot;
  std::string instance = s ? fmt::format("{} on {}, pid {}", s->version, s->listen, s->pid) : "";
  lines = flow({{{"keyshim top", Style::title}}, {{instance, Style::dim}}}, width);
  if (s != nullptr) {
    std::vector<Line> sums = totals(*s, width);
    lines.insert(lines.end(), sums.begin(), sums.end());
    if (!s->problem.empty()) {
      for (const std::string& text : wrap("problem: " + first_line(s->problem), width, 3)) {
        lines.push_back({{text, Style::alert}});
      }
    }
  }
  if (!input.offline.empty()) {
    std::string since = s ? fmt::format("no answer for {}: ", elapsed(input.offline_for)) : "";
    for (const std::string& text : wrap(since + input.offline, width, 3)) {
      lines.push_back({{text, Style::alert}});
    }
  }
  return lines;
}

// The keys to press and what req/min means, set side by side when they fit.
std::vector<Line> footer(const FrameInput& input, const Ui& ui, std::size_t shown, std::size_t position) {
  auto width = static_cast<std::size_t>(input.width);
  if (!input.interactive) {
    return {{{"one frame: stdout is no terminal", Style::dim}}};
  }
  if (ui.editing_filter) {
    return flow(
        {{{"filter: " + ui.filter + "_", Style::selected}}, {{"Enter keeps it, Esc clears it", Style::dim}}},
        width);
  }
  if (ui.detail) {
    return {{{"Esc back  q quit", Style::dim}}};
  }
  std::string filter = ui.filter.empty() ? "" : fmt::format(" \"{}\"", ui.filter);
  return flow({{{fmt::format("q quit  s sort: {}  / filter{}  arrows, Enter: key {} of {}",
                             to_string(ui.sort), filter, shown == 0 ? 0 : position + 1, shown),
                 Style::dim}},
               {{"req/min: change of each key's request count over the last minute", Style::dim}}},
              width);
}

const KeyRow* find_key(const Snapshot& snapshot, const std::string& id) {
  for (const PoolRow& pool : snapshot.pools) {
    for (const KeyRow& key : pool.keys) {
      if (key.id == id) {
        return &key;
      }
    }
  }
  return nullptr;
}

// The lines between heading and footer: the table, or the selected key's
// detail. A table longer than the screen shows the page with the selection.
std::vector<Line> middle(const FrameInput& input, std::size_t room) {
  const Ui& ui = *input.ui;
  const Snapshot& snapshot = *input.snapshot;
  if (ui.detail && input.interactive) {
    if (const KeyRow* key = selected_key(snapshot, ui)) {
      return detail_lines(*key, input.age, input.recent);
    }
  }
  Body body = table(snapshot, ui, input.interactive ? selected_id(snapshot, ui) : "", input.age,
                    static_cast<std::size_t>(input.width));
  if (!input.interactive || body.lines.size() <= room || room == 0) {
    return body.lines;
  }
  std::size_t first = body.selected_line / room * room;
  std::size_t last = std::min(body.lines.size(), first + room);
  return {body.lines.begin() + static_cast<std::ptrdiff_t>(first),
          body.lines.begin() + static_cast<std::ptrdiff_t>(last)};
}

} // namespace

const KeyRow* selected_key(const Snapshot& snapshot, const Ui& ui) {
  return find_key(snapshot, selected_id(snapshot, ui));
}

const char* to_string(SortOrder order) {
  switch (order) {
  case SortOrder::pool:
    return "pool";
  case SortOrder::state:
    return "state";
  case SortOrder::rate:
    return "req/min";
  case SortOrder::errors:
    return "errors";
  }
  return "pool";
}

std::vector<std::string> shown_keys(const Snapshot& snapshot, const Ui& ui) {
  std::vector<std::string> ids;
  for (const PoolRow& pool : snapshot.pools) {
    for (const KeyRow* key : ordered(pool, ui)) {
      ids.push_back(key->id);
    }
  }
  return ids;
}

std::vector<Line> render_frame(const FrameInput& input) {
  static const Ui k_default_ui;
  FrameInput in = input;
  in.ui = input.ui ? input.ui : &k_default_ui;
  in.width = std::max(in.width, 1);
  std::size_t shown = 0;
  std::size_t position = 0;
  if (in.snapshot) {
    std::vector<std::string> ids = shown_keys(*in.snapshot, *in.ui);
    shown = ids.size();
    position = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), selected_id(*in.snapshot, *in.ui)) -
                                        ids.begin());
  }
  std::vector<Line> lines = heading(in);
  lines.emplace_back();
  std::vector<Line> below = footer(in, *in.ui, shown, position);
  // What the footer leaves (a terminal shorter than heading and footer
  // gets the top of the heading and the footer).
  auto room = static_cast<std::size_t>(std::max(0, in.height - static_cast<int>(below.size())));
  if (in.snapshot) {
    std::vector<Line> body = middle(in, room > lines.size() ? room - lines.size() : 0);
    lines.insert(lines.end(), body.begin(), body.end());
  }
  if (in.interactive) {
    lines.resize(room); // cut, or padded so the footer is at the bottom
  }
  lines.insert(lines.end(), below.begin(), below.end());
  for (Line& line : lines) {
    clip(line, static_cast<std::size_t>(in.width));
  }
  return lines;
}

std::string plain(const Line& line) {
  std::string text;
  for (const Span& span : line) {
    text += span.text;
  }
  return text;
}

Look look_of(Style style, bool colour) {
  Look look;
  switch (style) {
  case Style::plain:
  case Style::bar:
    break;
  case Style::title:
    look.bold = true;
    break;
  case Style::heading:
  case Style::dim:
    look.dim = true;
    break;
  case Style::good:
    look.colour = Colour::green;
    break;
  case Style::warn:
    look.colour = Colour::yellow;
    look.bold = true;
    break;
  case Style::bad:
  case Style::alert:
    look.colour = Colour::red;
    look.bold = true;
    break;
  case Style::selected:
    look.reverse = true;
    break;
  }
  if (style == Style::bar) {
    look.colour = Colour::cyan;
  }
  if (!colour) {
    look.colour = Colour::none;
  }
  return look;
}

} // namespace keyshim::cli::top
