#include "cli/top_input.hpp"

#include <algorithm>

namespace keyshim::cli::top {
namespace {

constexpr std::ptrdiff_t k_page = 10;

void edit_filter(Ui& ui, const Input& input) {
  switch (input.press) {
  case Press::enter:
    ui.editing_filter = false;
    break;
  case Press::escape:
    ui.filter.clear();
    ui.editing_filter = false;
    break;
  case Press::backspace:
    // A whole UTF-8 character: its continuation bytes, then its first.
    while (!ui.filter.empty() && (static_cast<unsigned char>(ui.filter.back()) & 0xC0) == 0x80) {
      ui.filter.pop_back();
    }
    if (!ui.filter.empty()) {
      ui.filter.pop_back();
    }
    break;
  case Press::character:
    if (static_cast<unsigned char>(input.character) >= 0x20 && input.character != 0x7f) {
      ui.filter += input.character;
    }
    break;
  default:
    break;
  }
}

// The selection moves by `step` keys through `shown`, stopping at either end.
void move(Ui& ui, const std::vector<std::string>& shown, std::ptrdiff_t step) {
  if (shown.empty()) {
    return;
  }
  // A selection no longer shown reads as the first key, as the table marks it.
  auto at = std::find(shown.begin(), shown.end(), ui.selected);
  std::ptrdiff_t index = at == shown.end() ? 0 : at - shown.begin();
  index = std::clamp<std::ptrdiff_t>(index + step, 0, static_cast<std::ptrdiff_t>(shown.size()) - 1);
  ui.selected = shown[static_cast<std::size_t>(index)];
}

SortOrder next(SortOrder order) {
  switch (order) {
  case SortOrder::pool:
    return SortOrder::state;
  case SortOrder::state:
    return SortOrder::rate;
  case SortOrder::rate:
    return SortOrder::errors;
  case SortOrder::errors:
    break;
  }
  return SortOrder::pool;
}

bool character(Ui& ui, char c) {
  switch (c) {
  case 'q':
  case 'Q':
    return true;
  case 's':
    ui.sort = next(ui.sort);
    break;
  case '/':
    ui.detail = false;
    ui.editing_filter = true;
    break;
  default:
    break;
  }
  return false;
}

} // namespace

bool handle_input(Ui& ui, const Input& input, const std::vector<std::string>& shown) {
  if (ui.editing_filter) {
    edit_filter(ui, input);
    return false;
  }
  const auto end = static_cast<std::ptrdiff_t>(shown.size());
  switch (input.press) {
  case Press::character:
    if (input.character == 'j' || input.character == 'k') {
      move(ui, shown, input.character == 'j' ? 1 : -1);
      return false;
    }
    return character(ui, input.character);
  case Press::enter:
    ui.detail = !shown.empty();
    move(ui, shown, 0);
    break;
  case Press::escape:
    if (ui.detail) {
      ui.detail = false;
    } else {
      ui.filter.clear();
    }
    break;
  case Press::up:
  case Press::down:
  case Press::page_up:
  case Press::page_down:
  case Press::home:
  case Press::end:
    move(ui, shown,
         input.press == Press::up          ? -1
         : input.press == Press::down      ? 1
         : input.press == Press::page_up   ? -k_page
         : input.press == Press::page_down ? k_page
         : input.press == Press::home      ? -end
                                           : end);
    break;
  case Press::backspace:
    break;
  }
  return false;
}

} // namespace keyshim::cli::top
