#include "config/spelling.hpp"

#include <algorithm>

namespace keyshim::config {
namespace {

// Edits to turn `a` into `b`, counting a swap of neighbours as one edit
// ("kye" -> "key"), the most common typo in short names.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) {
    d[i][0] = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    d[0][j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

} // namespace

std::string closest_spelling(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = 3;
  for (std::string_view candidate : candidates) {
    std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance && distance * 2 < std::max(word.size(), candidate.size())) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

} // namespace keyshim::config
