#include "config/model_filter.hpp"

#include "util/ascii.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::config {
namespace {

bool any_matches(const std::vector<std::string>& patterns, std::string_view model) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return glob_match(pattern, model); });
}

} // namespace

// The classic one-star backtracking match: on a mismatch, the last `*` seen
// takes one more character. Each step moves `t` forward or moves the star's
// restart point forward, so it ends in at most |pattern| * |text| steps
// (model names are at most 200 bytes).
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() &&
               (pattern[p] == '?' || util::ascii_lower(pattern[p]) == util::ascii_lower(text[t]))) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

std::string model_pattern_problem(std::string_view pattern) {
  if (pattern.empty()) {
    return "is empty; write a model name or a pattern like \"gpt-4o*\"";
  }
  for (char c : pattern) {
    auto byte = static_cast<unsigned char>(c);
    if (byte == ' ') {
      return "has a space, which no model name has; write the name as the API spells it, like \"gpt-4o\"";
    }
    if (byte < 0x20 || byte >= 0x7f) {
      return "has a control byte or a non-ASCII character, which no model name keyshim matches has";
    }
  }
  return "";
}

bool ModelFilter::serves(std::string_view model) const {
  if (models && !any_matches(*models, model)) {
    return false;
  }
  return !any_matches(exclude_models, model);
}

std::string ModelFilter::text() const {
  if (!restricted()) {
    return "";
  }
  std::string out = models ? fmt::format("{}", fmt::join(*models, ", ")) : "every model";
  if (!exclude_models.empty()) {
    out += fmt::format(" except {}", fmt::join(exclude_models, ", "));
  }
  return out;
}

} // namespace keyshim::config
