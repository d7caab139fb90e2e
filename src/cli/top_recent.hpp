#pragma once
// A key's recent requests for `keyshim top`'s detail view, from the
// instance's captures (/captures, the list `keyshim log` prints).
#include "cli/status_table.hpp"
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"
#include "util/json.hpp"

namespace keyshim::cli::top {

// The entries of a /captures list whose chain of attempts used `key`,
// newest first, at most the last 8.
Recent recent_of(const util::Json& list, const KeyRow& key);

// GET /captures for the key's pool and keep the key's; a failed answer is
// the note.
Recent fetch_recent(const InstanceAddress& instance, const KeyRow& key);

} // namespace keyshim::cli::top
