#include "pool/model_health.hpp"

#include <algorithm>

namespace keyshim::pool {

const ModelHealth* ModelTable::find(const std::string& model) const {
  auto found = std::find_if(m_entries.begin(), m_entries.end(),
                            [&](const ModelHealth& entry) { return entry.model == model; });
  return found == m_entries.end() ? nullptr : &*found;
}

ModelHealth& ModelTable::get(const std::string& model, util::TimePoint now) {
  for (ModelHealth& entry : m_entries) {
    if (entry.model == model) {
      entry.touched = now;
      return entry;
    }
  }
  if (m_entries.size() >= k_max_models) {
    evict_one(now);
  }
  m_entries.push_back(ModelHealth{});
  m_entries.back().model = model;
  m_entries.back().touched = now;
  return m_entries.back();
}

void ModelTable::erase(const std::string& model) {
  m_entries.erase(std::remove_if(m_entries.begin(), m_entries.end(),
                                 [&](const ModelHealth& entry) { return entry.model == model; }),
                  m_entries.end());
}

// The least recently changed entry that is not cooling or probing goes
// first; only when every entry is, the one whose cooling ends soonest.
void ModelTable::evict_one(util::TimePoint now) {
  auto calm = m_entries.end();
  for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
    if (!it->cooling(now) && !it->probing && (calm == m_entries.end() || it->touched < calm->touched)) {
      calm = it;
    }
  }
  if (calm == m_entries.end()) {
    calm = std::min_element(m_entries.begin(), m_entries.end(),
                            [](const ModelHealth& a, const ModelHealth& b) { return a.until < b.until; });
  }
  m_entries.erase(calm);
}

ModelAccess ModelTable::access(const std::string& model, util::TimePoint now) {
  for (ModelHealth& entry : m_entries) {
    if (entry.model != model) {
      continue;
    }
    if (!entry.cooled) {
      return ModelAccess::open; // failures below the streak: not cooling
    }
    if (entry.cooling(now) || entry.probing) {
      return ModelAccess::closed;
    }
    entry.probing = true;
    return ModelAccess::probe;
  }
  return ModelAccess::open;
}

void ModelTable::end_probe(const std::string& model) {
  for (ModelHealth& entry : m_entries) {
    if (entry.model == model) {
      entry.probing = false;
    }
  }
}

} // namespace keyshim::pool
