#include "cli/top_recent.hpp"

#include "cli/capture_client.hpp"
#include "cli/capture_text.hpp"

#include <algorithm>

namespace keyshim::cli::top {
namespace {

constexpr std::size_t k_recent_count = 8;

bool used_key(const util::Json& entry, const std::string& label) {
  const util::Json* chain = entry.find("chain");
  if (chain == nullptr) {
    return false;
  }
  const util::Json::Array& steps = chain->items();
  return std::any_of(steps.begin(), steps.end(), [&](const util::Json& step) {
    const util::Json* key = step.find("key");
    return key != nullptr && key->as_string() == label;
  });
}

} // namespace

Recent recent_of(const util::Json& list, const KeyRow& key) {
  Recent recent;
  recent.key_id = key.id;
  static const util::Json::Array k_none;
  const util::Json* entries = list.find("entries");
  const util::Json::Array& all = entries != nullptr ? entries->items() : k_none;
  for (auto it = all.rbegin(); it != all.rend() && recent.lines.size() < k_recent_count; ++it) {
    if (used_key(*it, key.label)) {
      recent.lines.push_back(capture_brief_line(*it));
    }
  }
  if (recent.lines.empty()) {
    recent.note = "none among keyshim's captures (a pool's capture keeps failed exchanges unless set to "
                  "\"all\"; `keyshim log` lists them)";
  }
  return recent;
}

Recent fetch_recent(const InstanceAddress& instance, const KeyRow& key) {
  CaptureAnswer answer = fetch_captures(instance, captures_path(0, key.pool, std::nullopt));
  if (!answer.ok()) {
    Recent recent;
    recent.key_id = key.id;
    recent.note = "no captures: " + answer.error;
    return recent;
  }
  return recent_of(*answer.json, key);
}

} // namespace keyshim::cli::top
