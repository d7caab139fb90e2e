// The table screen of `keyshim top`: one block per pool (its queue, a row
// per key, and under a key the models in trouble on it and the bars of its
// quota and own limits). Columns drop out, least useful first, until a row
// fits the terminal.
#include "cli/top_table.hpp"

#include "cli/top_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>

namespace keyshim::cli::top {
namespace {

constexpr std::size_t k_marker = 2; // "> " before the selected key
constexpr std::size_t k_label_min = 5;
constexpr std::size_t k_label_max = 16;
constexpr std::size_t k_last_error_min = 12;

// The columns after the label, in the order they are shown; `keep` says
// which go last when the terminal is narrow (7: never).
enum class Column { state, resumes, flight, rate, tokens, websockets, last_error };
struct ColumnSpec {
  Column column;
  const char* title;
  std::size_t width; // for last_error: the least it is shown with
  int keep;
};
constexpr std::array<ColumnSpec, 7> k_columns = {{
    {Column::state, "STATE", 9, 7},
    {Column::resumes, "RESUMES", 7, 6},
    {Column::flight, "FLIGHT", 6, 5},
    {Column::rate, "REQ/M", 5, 3},
    {Column::tokens, "TOKENS", 6, 2},
    {Column::websockets, "WS", 3, 1},
    {Column::last_error, "LAST ERROR", k_last_error_min, 4},
}};

struct Layout {
  std::size_t label = k_label_min;
  std::vector<ColumnSpec> shown; // in display order
  std::size_t last_error = 0;    // the width left for it, when shown
};

Layout layout_for(const Snapshot& snapshot, std::size_t width) {
  Layout layout;
  bool websockets = false;
  for (const PoolRow& pool : snapshot.pools) {
    for (const KeyRow& key : pool.keys) {
      layout.label = std::max(layout.label, columns(key.label));
      websockets = websockets || key.websockets.has_value();
    }
  }
  layout.label = std::min(layout.label, k_label_max);
  std::size_t used = k_marker + layout.label;
  // Take the columns by how much they matter until one does not fit...
  std::vector<ColumnSpec> by_keep(k_columns.begin(), k_columns.end());
  std::stable_sort(by_keep.begin(), by_keep.end(), [](auto& a, auto& b) { return a.keep > b.keep; });
  std::vector<Column> taken;
  for (const ColumnSpec& spec : by_keep) {
    if (spec.column == Column::websockets && !websockets) {
      continue;
    }
    if (used + 1 + spec.width > width) {
      break;
    }
    used += 1 + spec.width;
    taken.push_back(spec.column);
  }
  // ...and show them in their own order; the last error gets what is left.
  for (const ColumnSpec& spec : k_columns) {
    if (std::find(taken.begin(), taken.end(), spec.column) != taken.end()) {
      layout.shown.push_back(spec);
    }
  }
  if (std::find(taken.begin(), taken.end(), Column::last_error) != taken.end()) {
    layout.last_error = k_last_error_min + (width - used);
  }
  return layout;
}

std::size_t width_of(const Layout& layout, const ColumnSpec& spec) {
  return spec.column == Column::last_error ? layout.last_error : spec.width;
}

// One cell of a key's row: its text and style.
Span cell(const KeyRow& key, Column column, Millis age, std::size_t width) {
  switch (column) {
  case Column::state:
    return {key.state, state_style(key.state)};
  case Column::resumes:
    return {key.state == "cooling" ? countdown(key.resumes_in - age) : "-", Style::plain};
  case Column::flight:
    return {flight_text(key), Style::plain};
  case Column::rate:
    return {rate_text(key.per_minute), Style::plain};
  case Column::tokens:
    return {compact(key.today.input_tokens + key.today.output_tokens), Style::plain};
  case Column::websockets:
    return {key.websockets ? std::to_string(*key.websockets) : "-", Style::plain};
  case Column::last_error:
    // Red while it is news, plain once a minute has passed.
    return {last_error_text(key, age, width),
            key.last_error && key.last_error->ago + age < std::chrono::minutes(1) ? Style::bad
                                                                                  : Style::plain};
  }
  return {};
}

Line key_line(const KeyRow& key, const Layout& layout, Millis age, bool selected) {
  Line line = {{selected ? "> " : "  ", Style::plain}, {fit(key.label, layout.label), Style::plain}};
  for (const ColumnSpec& spec : layout.shown) {
    Span span = cell(key, spec.column, age, width_of(layout, spec));
    line.push_back({" ", Style::plain});
    line.push_back({fit(span.text, width_of(layout, spec)), span.style});
  }
  if (selected) {
    for (Span& span : line) {
      span.style = Style::selected;
    }
  }
  return line;
}

Line heading_line(const Layout& layout) {
  std::string text = std::string(k_marker, ' ') + fit("LABEL", layout.label);
  for (const ColumnSpec& spec : layout.shown) {
    text += " " + fit(spec.title, width_of(layout, spec));
  }
  return {{text, Style::heading}};
}

// A model in trouble, under its key: its name where the label is, its state
// and countdown in theirs, and its reason where the last error is.
Line model_line(const ModelRow& model, const Layout& layout, Millis age) {
  Line line = {{std::string(k_marker, ' ') + fit("  " + model.model, layout.label), Style::dim}};
  for (const ColumnSpec& spec : layout.shown) {
    std::string text;
    Style style = Style::dim;
    if (spec.column == Column::state) {
      text = model.state;
      style = state_style(model.state);
    } else if (spec.column == Column::resumes) {
      text = model.state == "cooling" ? countdown(model.resumes_in - age) : "-";
    } else if (spec.column == Column::last_error) {
      text = model.reason;
    }
    line.push_back({" " + fit(text, width_of(layout, spec)), style});
  }
  return line;
}

// "quota requests [###-------] 70 of 100 left" for each gauge, side by side
// while they fit, under the key.
std::vector<Line> gauge_lines(const KeyRow& key, std::size_t width) {
  const std::string indent(k_marker + 2, ' ');
  std::size_t bar_width = width >= 60 ? 12 : 7;
  std::vector<Line> pieces;
  for (const Gauge& gauge : key.gauges) {
    pieces.push_back({{fmt::format("{} {} ", gauge.kind, gauge.name), Style::dim},
                      {bar(gauge.used, gauge.limit, bar_width), Style::bar},
                      {" " + gauge_amount(gauge), Style::dim}});
  }
  std::vector<Line> lines = flow(pieces, width > indent.size() ? width - indent.size() : 1);
  for (Line& line : lines) {
    line.insert(line.begin(), {indent, Style::plain});
  }
  return lines;
}

std::string pool_title(const PoolRow& pool, Millis age) {
  std::string text = fmt::format("pool {} at {} -> {}", pool.name, pool.route, pool.upstream);
  if (pool.waiting) {
    text += fmt::format("  waiting {}", *pool.waiting);
  }
  if (pool.waiting.value_or(0) > 0) {
    text += fmt::format(", oldest {}", elapsed(pool.oldest_wait + age));
  }
  return text;
}

bool matches(const KeyRow& key, const std::string& filter) {
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  return filter.empty() || lower(key.label).find(lower(filter)) != std::string::npos;
}

int state_rank(const std::string& state) {
  return state == "disabled" ? 0 : state == "cooling" ? 1 : 2;
}

} // namespace

std::vector<const KeyRow*> ordered(const PoolRow& pool, const Ui& ui) {
  std::vector<const KeyRow*> keys;
  for (const KeyRow& key : pool.keys) {
    if (matches(key, ui.filter)) {
      keys.push_back(&key);
    }
  }
  std::function<bool(const KeyRow*, const KeyRow*)> before;
  switch (ui.sort) {
  case SortOrder::pool:
    return keys;
  case SortOrder::state:
    before = [](auto* a, auto* b) { return state_rank(a->state) < state_rank(b->state); };
    break;
  case SortOrder::rate:
    before = [](auto* a, auto* b) { return a->per_minute.value_or(-1) > b->per_minute.value_or(-1); };
    break;
  case SortOrder::errors:
    before = [](auto* a, auto* b) { return a->err > b->err; };
    break;
  }
  std::stable_sort(keys.begin(), keys.end(), before);
  return keys;
}

Body table(const Snapshot& snapshot, const Ui& ui, const std::string& selected, Millis age,
           std::size_t width) {
  Body body;
  Layout layout = layout_for(snapshot, width);
  for (const PoolRow& pool : snapshot.pools) {
    body.lines.push_back({{pool_title(pool, age), Style::title}});
    std::vector<const KeyRow*> keys = ordered(pool, ui);
    if (keys.empty()) {
      body.lines.push_back({{pool.keys.empty() ? "  no keys" : "  no key matches the filter", Style::dim}});
    } else {
      body.lines.push_back(heading_line(layout));
    }
    for (const KeyRow* key : keys) {
      if (key->id == selected) {
        body.selected_line = body.lines.size();
      }
      body.lines.push_back(key_line(*key, layout, age, key->id == selected));
      for (const ModelRow& model : key->models) {
        body.lines.push_back(model_line(model, layout, age));
      }
      if (!key->gauges.empty()) {
        std::vector<Line> gauges = gauge_lines(*key, width);
        body.lines.insert(body.lines.end(), gauges.begin(), gauges.end());
      }
    }
    body.lines.emplace_back();
  }
  return body;
}

} // namespace keyshim::cli::top
