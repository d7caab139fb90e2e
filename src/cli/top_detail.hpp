#pragma once
// Internal to cli/: one key's whole /status entry, the screen `keyshim top`
// shows when a key is chosen with Enter.
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"

#include <vector>

namespace keyshim::cli::top {

// The key's detail, countdowns and times moved on by `age`, and its recent
// requests when `recent` holds this key's (null: not asked yet).
std::vector<Line> detail_lines(const KeyRow& key, Millis age, const Recent* recent);

} // namespace keyshim::cli::top
